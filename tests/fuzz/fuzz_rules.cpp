// The rules loader (rules/load.h) on any text, by both of its ways in:
//  - as a rules file (YAML through libyaml), the way floodctl and `floodgate replay` read one;
//    a file accepted there is sent on as its JSON document, which the dataplane validates
//    again, so that document must be accepted too, and mean the same;
//  - as the JSON document a load request carries, read by the control protocol's bounded
//    parser (dataplane/api/message.h) exactly as the dataplane reads it.
// A refusal is a ConfigError or a MessageError; any other exception is a finding.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "dataplane/api/dataplane_commands.h"
#include "dataplane/api/message.h"
#include "rules/load.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using namespace floodgate;

bool same_match(const RuleMatch &a, const RuleMatch &b) {
    auto same_ports = [](const std::vector<PortRange> &x, const std::vector<PortRange> &y) {
        if (x.size() != y.size()) return false;
        for (size_t i = 0; i < x.size(); ++i)
            if (x[i].lo != y[i].lo || x[i].hi != y[i].hi) return false;
        return true;
    };
    return a.proto == b.proto && same_ports(a.dst_ports, b.dst_ports) &&
           same_ports(a.src_ports, b.src_ports) && a.src == b.src && a.dst == b.dst &&
           a.tcp_flags.must_set == b.tcp_flags.must_set &&
           a.tcp_flags.must_clear == b.tcp_flags.must_clear;
}

// Everything but line numbers, which a JSON document does not have.
bool same_config(const Config &a, const Config &b) {
    if (a.allow != b.allow || a.block != b.block ||
        a.table_entries_per_core != b.table_entries_per_core || a.rules.size() != b.rules.size())
        return false;
    for (size_t i = 0; i < a.rules.size(); ++i) {
        const Rule &x = a.rules[i];
        const Rule &y = b.rules[i];
        if (x.name != y.name || !same_match(x.match, y.match) || x.key_ipv4_len != y.key_ipv4_len ||
            x.key_ipv6_len != y.key_ipv6_len || x.rate_count != y.rate_count ||
            x.rate_period_ns != y.rate_period_ns || x.burst_pkts != y.burst_pkts ||
            x.algorithm != y.algorithm || x.action != y.action || x.mode != y.mode ||
            x.on_table_full != y.on_table_full)
            return false;
    }
    return true;
}

// What validation promises every later computation.
void check_limits(const Config &c) {
    FUZZ_CHECK(c.rules.size() <= kMaxRules);
    FUZZ_CHECK(c.table_entries_per_core >= 1 &&
               c.table_entries_per_core <= kMaxTableEntriesPerCore);
    for (const Rule &r : c.rules) {
        FUZZ_CHECK(!r.name.empty() && r.name.size() <= kMaxRuleNameLen);
        FUZZ_CHECK(r.rate_count >= 1 && r.interval_ns() >= 1);
        FUZZ_CHECK(r.rate_period_ns <= kMaxRatePeriodNs);
        if (!is_window(r.algorithm)) {
            FUZZ_CHECK(r.burst_pkts >= 1 && r.burst_pkts <= kMaxBurstPkts);
        } else {
            // The encodings of dataplane/core/window.h: the count must fit below W.
            FUZZ_CHECK(r.burst_pkts == 0 && r.rate_count <= kMaxWindowPkts);
            FUZZ_CHECK(r.rate_period_ns >= kMinWindowNs);
            if (r.algorithm == RuleAlgorithm::fixed_window)
                FUZZ_CHECK(r.rate_count < r.rate_period_ns);
            else
                FUZZ_CHECK((r.rate_count + 1) * (r.rate_count + 1) <= r.rate_period_ns);
        }
        FUZZ_CHECK(r.key_ipv4_len <= 32 && r.key_ipv6_len <= 128);
        for (const PortRange &p : r.match.dst_ports) FUZZ_CHECK(p.lo <= p.hi);
        for (const PortRange &p : r.match.src_ports) FUZZ_CHECK(p.lo <= p.hi);
    }
}

void as_yaml(const std::string &text) {
    std::optional<RulesFile> file;
    try {
        file = parse_rules_file(text, "fuzz.yaml");
    } catch (const ConfigError &e) {
        FUZZ_CHECK(e.file() == "fuzz.yaml" && e.line() >= 0);
        return;
    }
    check_limits(file->config);
    // As floodctl sends it (dump) and the dataplane reads it (parse_request, then the loader).
    const std::string line =
        dataplane_request(DataplaneCommand::load, {{"rules", file->doc}}).dump() + "\n";
    const nlohmann::json request = parse_request(line);
    Config again;
    try {
        again = config_from_doc(json_to_doc(request.at("rules"), "fuzz.yaml"), "fuzz.yaml");
    } catch (const ConfigError &e) {
        std::fprintf(stderr, "accepted as YAML, refused as its JSON document: %s\n", e.what());
        FUZZ_CHECK(!"the JSON document of an accepted file is accepted");
    }
    FUZZ_CHECK(same_config(file->config, again));
}

void as_json(const std::string &text) {
    nlohmann::json request;
    try {
        request = parse_request(R"({"cmd": "load", "rules": )" + text + "}");
    } catch (const MessageError &) {
        return;
    }
    try {
        check_limits(config_from_doc(json_to_doc(request.at("rules"), "fuzz.json"), "fuzz.json"));
    } catch (const ConfigError &e) {
        FUZZ_CHECK(e.file() == "fuzz.json" && e.line() == 0);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const std::string text(reinterpret_cast<const char *>(data), size);
    as_yaml(text);
    as_json(text);
    return 0;
}
