#include "control/xdp_cli.h"

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "dataplane/api/numbers.h"
#include "rules/load.h"

#if FG_HAVE_XDP
#include "bpf/xdp_tier.h"
#endif

namespace floodgate {

namespace {

int usage(const std::string &why) {
    std::fprintf(stderr, "floodctl: xdp: %s\nusage:\n%s", why.c_str(), kXdpUsage);
    return 2;
}

int failed(const std::string &why) {
    std::fprintf(stderr, "floodctl: xdp: %s\n", why.c_str());
    return 1;
}

}  // namespace

#if !FG_HAVE_XDP
int cmd_xdp(const std::vector<std::string> &, bool) {
    return failed("this floodctl was built without the XDP tier (no clang, bpftool or libbpf)");
}
#else

namespace {

const char *reason_name(fg_xdp_block_reason r) {
    return r == FG_XDP_escalated_hits ? "escalated" : "block";
}

// FLOODGATE_XDP_PIN_DIR moves the pinned maps elsewhere (the lab test's own directory).
std::unique_ptr<XdpTier> open_tier(std::string *error) {
    XdpOptions o;
    o.standalone = true;
    if (const char *dir = std::getenv("FLOODGATE_XDP_PIN_DIR"); dir != nullptr && *dir != 0)
        o.pin_dir = dir;
    return XdpTier::load(o, error);
}

int list(XdpTier &tier, bool json_out) {
    const uint64_t now = XdpTier::monotonic_ns();
    nlohmann::json out = nlohmann::json::array();
    for (const XdpBlock &b : tier.list()) {
        nlohmann::json e = {{"prefix", format_prefix(b.prefix)}, {"reason", reason_name(b.reason)}};
        e["expires_in_s"] =
            b.expires_ns == 0
                ? nlohmann::json()
                : nlohmann::json(b.expires_ns > now ? (b.expires_ns - now) / 1'000'000'000 : 0);
        out.push_back(e);
    }
    if (json_out) {
        std::printf("%s\n", nlohmann::json{{"ok", true}, {"entries", out}}.dump(2).c_str());
        return 0;
    }
    if (out.empty()) std::printf("(no entries)\n");
    for (const auto &e : out)
        std::printf(
            "%-45s %-10s %s\n", e["prefix"].get<std::string>().c_str(),
            e["reason"].get<std::string>().c_str(),
            e["expires_in_s"].is_null()
                ? "never expires"
                : ("expires in " + format_duration_s(e["expires_in_s"].get<long long>())).c_str());
    return 0;
}

int stats(XdpTier &tier, bool json_out) {
    const std::vector<uint64_t> c = tier.counters();
    nlohmann::json out = nlohmann::json::object();
    for (unsigned i = 0; i < c.size(); ++i) out[xdp_counter_name(i)] = c[i];
    if (json_out) {
        std::printf("%s\n", nlohmann::json{{"ok", true}, {"counters", out}}.dump(2).c_str());
        return 0;
    }
    for (unsigned i = 0; i < c.size(); ++i)
        std::printf("%-16s %llu\n", xdp_counter_name(i), static_cast<unsigned long long>(c[i]));
    return 0;
}

}  // namespace

int cmd_xdp(const std::vector<std::string> &a, bool json_out) {
    if (a.empty()) return usage("no subcommand");
    const std::string &sub = a[0];
    if (sub == "detach") {
        if (a.size() != 2) return usage("detach IFACE");
        std::string error;
        return XdpTier::detach(a[1], &error) ? 0 : failed(error);
    }
    std::string error;
    std::unique_ptr<XdpTier> tier = open_tier(&error);
    if (!tier) return failed(error);
    tier->expire(XdpTier::monotonic_ns());
    if (sub == "attach") {
        if (a.size() != 2 && !(a.size() == 4 && a[2] == "--config"))
            return usage("attach IFACE [--config RULES.yaml]");
        if (a.size() == 4) {
            const Config config = load_config(a[3]);  // refused with file:line:field
            for (const Prefix &p : config.block)
                if (!tier->add(XdpBlock{p, FG_XDP_block_hits, 0}, &error)) return failed(error);
        }
        if (!tier->attach(a[1], &error)) return failed(error);
        std::printf("attached to %s\n", a[1].c_str());
        return 0;
    }
    if (sub == "list" && a.size() == 1) return list(*tier, json_out);
    if (sub == "stats" && a.size() == 1) return stats(*tier, json_out);
    if (sub == "add" && (a.size() == 2 || (a.size() == 4 && a[2] == "--ttl"))) {
        std::string why;
        const std::optional<Prefix> p = parse_prefix(a[1], &why);
        if (!p) return usage(why);
        uint64_t expires_ns = 0;
        if (a.size() == 4) {
            const std::optional<long long> s = parse_duration_s(a[3], &why);
            if (!s || *s <= 0) return usage("--ttl " + (s ? std::string("must be positive") : why));
            expires_ns = XdpTier::monotonic_ns() + static_cast<uint64_t>(*s) * 1'000'000'000ull;
        }
        return tier->add(XdpBlock{*p, FG_XDP_block_hits, expires_ns}, &error) ? 0 : failed(error);
    }
    if (sub == "del" && a.size() == 2) {
        std::string why;
        const std::optional<Prefix> p = parse_prefix(a[1], &why);
        if (!p) return usage(why);
        return tier->remove(*p, &error) ? 0 : failed(error);
    }
    return usage("unknown subcommand or wrong arguments: " + sub);
}

#endif

}  // namespace floodgate
