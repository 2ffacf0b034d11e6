// `floodgate probe`: for each port given, what floodgate could do with it (port_probe.h), as a
// table or as JSON. An operator runs it before deploying; docs/bring-up.md says what to look for.
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "dataplane/api/numbers.h"
#include "dataplane/commands/commands.h"
#include "dataplane/commands/options.h"
#include "dataplane/core/keyed_hash.h"
#include "dataplane/live/dataplane.h"
#include "dataplane/live/offload_names.h"
#include "dataplane/service/port_probe.h"

namespace floodgate {

namespace {

constexpr const char *kProbeCommand = "floodgate probe";
constexpr const char *kProbeUsage =
    "usage: floodgate probe [EAL options] -- [--json] [--queues N] [PORT...]\n"
    "For each port (every port the EAL found, without PORT), what floodgate could do with\n"
    "it: driver, link, queues, RSS (key and RETA sizes, hash types, whether source steering\n"
    "is honoured, read back), RX and TX offloads, the rte_flow items and actions the NIC tier\n"
    "needs (validated, nothing created), and what `floodgate run` would choose: steering\n"
    "mode and tiers. --queues: the queues (workers) to ask for, by default one per worker\n"
    "lcore and at least 2. The port is configured as floodgate run would, started only where\n"
    "reading its RSS back needs it, never promiscuous, nothing received or sent, then closed.\n"
    "--json prints one JSON array, a port an element.\n";

using nlohmann::ordered_json;

std::string joined(const std::vector<std::string> &names) {
    std::string out;
    for (const std::string &n : names) out += (out.empty() ? "" : " ") + n;
    return out.empty() ? "none" : out;
}

std::string speed_text(const PortProbe &p) {
    if (p.speed_mbps == RTE_ETH_SPEED_NUM_UNKNOWN) return "speed unknown";
    if (p.speed_mbps == RTE_ETH_SPEED_NUM_NONE) return "no speed";
    return p.speed_mbps % 1000 == 0 ? std::to_string(p.speed_mbps / 1000) + " Gbit/s"
                                    : std::to_string(p.speed_mbps) + " Mbit/s";
}

bool offers(const PortProbe &p, uint64_t bit) {
    return (p.rss_offloads & bit) != 0;
}

ordered_json flow_json(const FlowCheck &c) {
    ordered_json j = {{"accepted", c.answer.accepted}};
    if (!c.answer.accepted) {
        j["refusal"] = nic_refusal_name(c.answer.refusal);
        j["message"] = c.answer.message;
    }
    return j;
}

ordered_json probe_json(const PortProbe &p) {
    ordered_json j = {{"port", p.port}, {"name", p.name}, {"driver", p.driver}};
    if (!p.error.empty()) j["error"] = p.error;
    j["link"] = {{"up", p.link_up}, {"speed_mbps", p.speed_mbps}};
    j["queues"] = {{"max_rx", p.max_rx_queues},
                   {"max_tx", p.max_tx_queues},
                   {"wanted", p.wanted_queues},
                   {"asked", p.queues}};
    ordered_json rss = {{"hash_key_size", p.hash_key_size},
                        {"reta_size", p.reta_size},
                        {"offloads", hex_bits(p.rss_offloads)},
                        {"types", rss_type_names(p.rss_offloads)},
                        {"l3_src_only", offers(p, RTE_ETH_RSS_L3_SRC_ONLY)},
                        {"l3_dst_only", offers(p, RTE_ETH_RSS_L3_DST_ONLY)}};
    rss["read_back"] = p.rss_read ? ordered_json(rss_type_names(p.rss_hf_read)) : ordered_json();
    rss["source_steering"] = p.features.steers;
    if (!p.features.rss_refused.empty()) rss["refused"] = p.features.rss_refused;
    j["rss"] = rss;
    j["rx_offloads"] = rx_offload_names(p.rx_offloads);
    j["tx_offloads"] = tx_offload_names(p.tx_offloads);
    ordered_json flows = ordered_json::object();
    for (const FlowCheck &c : p.tier) flows[c.name] = flow_json(c);
    for (const FlowCheck &c : p.flows) flows[c.name] = flow_json(c);
    j["rte_flow"] = flows;
    ordered_json steering = {{"mode", p.steering.mode}, {"reason", p.steering.reason}};
    if (p.steering.steering.by_source)
        steering.update({{"ipv4_len", p.steering.steering.ipv4_len},
                         {"ipv6_len", p.steering.steering.ipv6_len}});
    ordered_json nic = {{"available", p.nic_tier}, {"counted", p.nic_tier_counted}};
    if (!p.nic_tier) nic["why_not"] = p.nic_tier_why;
    j["choice"] = {{"steering", steering},
                   {"nic_tier", nic},
                   {"xdp_tier", {{"available", p.xdp_tier}, {"how", p.xdp_why}}}};
    return j;
}

void print_table(const PortProbe &p) {
    auto row = [](const char *field, const std::string &value) {
        std::printf("  %-18s %s\n", field, value.c_str());
    };
    std::printf("port %u: %s (%s)\n", p.port, p.name.c_str(), p.driver.c_str());
    if (!p.error.empty()) row("error", p.error);
    row("link", std::string(p.link_up ? "up" : "down") + ", " + speed_text(p));
    row("queues", "rx " + std::to_string(p.max_rx_queues) + ", tx " +
                      std::to_string(p.max_tx_queues) + " (asked for " + std::to_string(p.queues) +
                      " of the " + std::to_string(p.wanted_queues) + " wanted)");
    row("rss", "key " + std::to_string(p.hash_key_size) + " bytes, RETA " +
                   std::to_string(p.reta_size) + ", types " + hex_bits(p.rss_offloads));
    row("rss types", joined(rss_type_names(p.rss_offloads)));
    if (p.rss_read) row("rss read back", joined(rss_type_names(p.rss_hf_read)));
    row("source steering", p.features.steers ? "honoured (read back)"
                                             : "no: " + (p.features.rss_refused.empty()
                                                             ? std::string("not asked (one queue)")
                                                             : p.features.rss_refused));
    row("rx offloads", joined(rx_offload_names(p.rx_offloads)));
    row("tx offloads", joined(tx_offload_names(p.tx_offloads)));
    // The tier's lines, then the items' and actions'; a port without rte_flow refuses every
    // one alike, and one line says so.
    std::vector<FlowCheck> checks = p.tier;
    checks.insert(checks.end(), p.flows.begin(), p.flows.end());
    const bool no_flow_api =
        !checks.empty() && std::all_of(checks.begin(), checks.end(), [&](const FlowCheck &c) {
            return !c.answer.accepted && c.answer.refusal == NicRefusal::other &&
                   c.answer.message == checks.front().answer.message;
        });
    if (no_flow_api) row("rte_flow", "every check refused: " + checks.front().answer.message);
    for (const FlowCheck &c : no_flow_api ? std::vector<FlowCheck>{} : checks)
        row(("flow " + c.name).c_str(), c.answer.accepted ? "accepted"
                                                          : std::string("refused (") +
                                                                nic_refusal_name(c.answer.refusal) +
                                                                "): " + c.answer.message);
    row("steering",
        (p.steering.mode.empty() ? "refused" : p.steering.mode) + ": " + p.steering.reason);
    row("nic tier", !p.nic_tier ? "no: " + p.nic_tier_why
                    : p.nic_tier_counted
                        ? std::string("yes: the tier's rules validate, DROP + COUNT")
                        : std::string("yes: DROP alone, uncounted (the port "
                                      "refuses COUNT)"));
    row("xdp tier", std::string(p.xdp_tier ? "yes: " : "no: ") + p.xdp_why);
}

// The ports named after "--", or every port the EAL found.
bool ports_to_probe(const std::vector<std::string> &operands, std::vector<uint16_t> *out,
                    std::string *error) {
    if (operands.empty()) {
        uint16_t port;
        RTE_ETH_FOREACH_DEV(port) out->push_back(port);
        if (out->empty()) *error = "no port: give one to the EAL (-a PCI or --vdev)";
        return !out->empty();
    }
    for (const std::string &o : operands) {
        std::string why;
        const std::optional<uint64_t> n = parse_uint(o, 0, RTE_MAX_ETHPORTS - 1, &why);
        if (!n) {
            *error = "PORT " + why;
            return false;
        }
        if (!rte_eth_dev_is_valid_port(static_cast<uint16_t>(*n))) {
            *error =
                "no port " + o + " (" + std::to_string(rte_eth_dev_count_avail()) + " available)";
            return false;
        }
        out->push_back(static_cast<uint16_t>(*n));
    }
    return true;
}

struct PoolFree {
    void operator()(rte_mempool *pool) const { rte_mempool_free(pool); }
};

}  // namespace

int probe_main(int argc, char **argv) {
    bool json = false;
    unsigned queues = 0;
    CommandLine cli(kProbeCommand, kProbeUsage);
    cli.flag("--json", &json);
    cli.number("--queues", 1, RTE_MAX_QUEUES_PER_PORT,
               [&](uint64_t n) { queues = static_cast<unsigned>(n); });
    for (int i = 1; i < argc; ++i)
        if (std::string_view(argv[i]) == "--help" || std::string_view(argv[i]) == "-h") {
            std::fputs(kProbeUsage, stdout);
            return 0;
        }
    const EalSession eal(argc, argv);  // released last
    if (!eal.ok()) return cli.fail(eal.error());
    if (const std::optional<int> done = cli.parse(argc - eal.consumed(), argv + eal.consumed()))
        return *done;
    std::vector<uint16_t> ports;
    std::string error;
    if (!ports_to_probe(cli.operands(), &ports, &error)) return cli.usage_error(error);
    ProbeSetup setup;
    setup.queues = static_cast<uint16_t>(
        queues != 0 ? queues : std::max(2u, rte_lcore_count() > 1 ? rte_lcore_count() - 1 : 2u));
    // Random as run's, though nothing hashes with it after the probe.
    uint8_t key_bits[kMaxSteeringKeyBytes];
    for (size_t at = 0; at < sizeof(key_bits); at += sizeof(HashSeed)) {
        const HashSeed r = random_hash_seed();
        std::memcpy(key_bits + at, r.k, sizeof(HashSeed));
    }
    setup.key_bits = key_bits;
    // Enough for the RX rings of the ports a probe starts (512 descriptors a queue).
    const std::unique_ptr<rte_mempool, PoolFree> pool(
        rte_pktmbuf_pool_create("fg_probe", std::max(4096u, 2u * setup.queues * 512u), 0, 0,
                                RTE_MBUF_DEFAULT_BUF_SIZE, static_cast<int>(rte_socket_id())));
    if (!pool) return cli.fail("cannot create the probe's mbuf pool (not enough memory?)");
    ordered_json all = ordered_json::array();
    for (uint16_t port : ports) {
        const PortProbe p = probe_port(port, setup, pool.get());
        if (json)
            all.push_back(probe_json(p));
        else
            print_table(p);
    }
    if (json) std::printf("%s\n", all.dump(2).c_str());
    return 0;
}

}  // namespace floodgate
