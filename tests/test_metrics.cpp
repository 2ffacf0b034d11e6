#include "control/metrics/metrics.h"

#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "dataplane/api/stats.h"

namespace floodgate {
namespace {

using nlohmann::json;

// The counter names, from the same lists the dataplane and the formatter use.
const std::vector<std::string> kWorkerCounters = {
#define FG_X(name) #name,
    FG_WORKER_COUNTERS(FG_X)
#undef FG_X
};
const std::vector<std::string> kRuleCounters = {
#define FG_X(name) #name,
    FG_RULE_COUNTERS(FG_X)
#undef FG_X
};
// Every malformed reason but "none", which is no malformation.
const std::vector<std::string> kMalformedReasons = [] {
    std::vector<std::string> names = {
#define FG_X(name) #name,
        FG_MALFORMED_REASONS(FG_X)
#undef FG_X
    };
    names.erase(names.begin());
    return names;
}();

std::vector<std::string> lines_of(const std::string &text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

bool has_line(const std::string &text, const std::string &line) {
    for (const std::string &l : lines_of(text))
        if (l == line) return true;
    return false;
}

// The family name of every "# TYPE" line, with how often each appears.
std::map<std::string, int> type_lines(const std::string &text) {
    std::map<std::string, int> families;
    for (const std::string &l : lines_of(text))
        if (l.rfind("# TYPE ", 0) == 0) ++families[l.substr(7, l.find(' ', 7) - 7)];
    return families;
}

// The sample lines (neither HELP nor TYPE) whose metric is name.
std::vector<std::string> samples_of(const std::string &text, const std::string &name) {
    std::vector<std::string> samples;
    for (const std::string &l : lines_of(text))
        if (l.rfind('#', 0) != 0 && l.substr(0, l.find_first_of("{ ")) == name)
            samples.push_back(l);
    return samples;
}

size_t sample_count(const std::string &text) {
    size_t n = 0;
    for (const std::string &l : lines_of(text)) n += l.rfind('#', 0) != 0;
    return n;
}

// Every family has one HELP and one TYPE line, in that order, right before its samples, and
// every sample belongs to the family above it; the text ends with a newline.
void expect_well_formed(const std::string &text) {
    ASSERT_FALSE(text.empty());
    EXPECT_EQ(text.back(), '\n');
    std::map<std::string, int> helps, types;
    std::string family, expect_type_for;
    for (const std::string &l : lines_of(text)) {
        if (l.rfind("# HELP ", 0) == 0) {
            EXPECT_TRUE(expect_type_for.empty()) << l;
            family = l.substr(7, l.find(' ', 7) - 7);
            ++helps[family];
            expect_type_for = family;
        } else if (l.rfind("# TYPE ", 0) == 0) {
            EXPECT_EQ(l.substr(7, l.find(' ', 7) - 7), expect_type_for) << l;
            ++types[expect_type_for];
            expect_type_for.clear();
        } else {
            EXPECT_TRUE(expect_type_for.empty()) << l;
            const std::string name = l.substr(0, l.find_first_of("{ "));
            EXPECT_EQ(name, family) << l;
        }
    }
    for (const auto &[name, n] : helps) EXPECT_EQ(n, 1) << name;
    EXPECT_EQ(helps.size(), types.size());
    for (const auto &[name, n] : types) EXPECT_EQ(n, 1) << name;
}

json status_reply() {
    return json::parse(R"({
        "ok": true, "instance": "1-2", "started_unix": 1700000000.25, "uptime_s": 3.5,
        "workers": 2,
        "ruleset": {"version": 3, "loaded_unix": 1700000100.5, "source": "/etc/fg.yaml",
                    "origin": "floodctl", "rules": 4, "overrides": 1},
        "reloads": {"ok": 2, "failed": 1},
        "overrides_expired": 5, "requests_refused": 7})");
}

json overrides_reply() {
    return json::parse(R"({"ok": true, "version": 3, "overrides": [
        {"list": "block", "prefix": "192.0.2.0/24", "expires_unix": null, "ttl_left_s": null},
        {"list": "block", "prefix": "2001:db8::/32", "expires_unix": 1.5, "ttl_left_s": 1.0}]})");
}

json stats_object() {
    json core0 = {
        {"core", 0},
        {"lcore", 1},
        {"table", {{"capacity", 1024}, {"occupancy", 3}, {"reclaims", 4}, {"full_events", 5}}},
        {"merge_max_lag_ns", 1500000},
        {"merge_records_lost", 6},
        {"steering", {{"handed_out", 7}, {"taken_in", 8}, {"ring_full", 9}, {"unhashed", 10}}}};
    json core1 = core0;
    core1["core"] = 1;
    // Each counter a value of its own: 100, 101, ... on core 0, then on core 1.
    uint64_t n = 100;
    for (const std::string &name : kWorkerCounters) core0[name] = n++;
    for (const std::string &name : kWorkerCounters) core1[name] = n++;
    core0["packets"] = 1000;
    core1["packets"] = 2000;

    json dns = {{"name", "dns"}, {"mode", "enforce"}};
    json syn = {{"name", "syn"}, {"mode", "shadow"}};
    for (const std::string &name : kRuleCounters) {
        dns[name] = 1;
        syn[name] = 2;
    }
    dns["refused"] = 42;
    dns["top_refused"] = {{{"source", "198.18.1.1/32"}, {"count", 40}, {"error", 0}},
                          {{"source", "2001:db8::/64"}, {"count", 2}, {"error", 1}},
                          {{"source", "198.18.2.2/32"},
                           {"count", 3200},
                           {"error", 16},
                           {"sampling_error", 100},
                           {"confidence", 0.99}}};
    syn["top_refused"] = json::array();

    json nic0 = {{"port", 0},      {"role", "outside"}, {"rx_packets", 10}, {"rx_bytes", 640},
                 {"rx_missed", 1}, {"rx_errors", 2},    {"rx_nombuf", 3},   {"tx_packets", 0},
                 {"tx_bytes", 0},  {"tx_errors", 0},    {"link", "up"},     {"losses", 0}};
    json nic1 = {{"port", 1},       {"role", "inside"}, {"rx_packets", 0}, {"rx_bytes", 0},
                 {"rx_missed", 0},  {"rx_errors", 0},   {"rx_nombuf", 0},  {"tx_packets", 9},
                 {"tx_bytes", 576}, {"tx_errors", 0},   {"link", "down"},  {"losses", 2}};
    return {{"packets", 3000},
            {"malformed_reasons", {{"ipv4_bad_ihl", 7}, {"l4_truncated", 8}}},
            {"table", {{"capacity", 2048}, {"bytes_per_entry", 32}, {"memory_bytes", 73819904}}},
            {"rules", {dns, syn}},
            {"ports",
             {{"outside_to_inside", {{"rx", 20}, {"tx", 9}, {"tx_failed", 1}}},
              {"inside_to_outside", {{"rx", 0}, {"tx", 0}, {"tx_failed", 0}}}}},
            {"nic", {nic0, nic1}},
            {"cores", {core0, core1}},
            {"merge", {{"workers", 2}, {"interval_ns", 1000000}, {"max_lag_ns", 1500000}}},
            {"steering", {{"mode", "software"}, {"nic_refused", "offers no RSS on IP"}}}};
}

std::string full_text() {
    const json status = status_reply(), stats = stats_object(), overrides = overrides_reply();
    MetricsInput in;
    in.dataplane_up = true;
    in.status = &status;
    in.stats = &stats;
    in.overrides = &overrides;
    in.dataplane_connects = 3;
    return prometheus_text(in);
}

TEST(Metrics, NothingButTheAlwaysPresentFamiliesWhenTheDataplaneIsDown) {
    MetricsInput in;
    in.dataplane_connects = 4;
    const std::string text = prometheus_text(in);
    EXPECT_EQ(text,
              "# HELP floodgate_dataplane_up 1 when the daemon's last poll of the dataplane "
              "succeeded, else 0.\n"
              "# TYPE floodgate_dataplane_up gauge\n"
              "floodgate_dataplane_up 0\n"
              "# HELP floodgate_control_dataplane_connects_total Times the daemon connected (or "
              "reconnected) to the dataplane's socket.\n"
              "# TYPE floodgate_control_dataplane_connects_total counter\n"
              "floodgate_control_dataplane_connects_total 4\n");
}

TEST(Metrics, EndpointRefusalsOnlyWithAWebConfig) {
    MetricsInput in;
    EXPECT_EQ(prometheus_text(in).find("floodgate_metrics_auth_refused_total"), std::string::npos);
    in.auth_refusals = AuthRefusals{2, 3, 0};
    const std::string text = prometheus_text(in);
    expect_well_formed(text);
    for (const char *line :
         {"floodgate_metrics_auth_refused_total{reason=\"no_credentials\"} 2",
          "floodgate_metrics_auth_refused_total{reason=\"wrong_credentials\"} 3",
          "floodgate_metrics_auth_refused_total{reason=\"client_certificate\"} 0"})
        EXPECT_TRUE(has_line(text, line)) << line << "\n" << text;
}

TEST(Metrics, EveryFamilyHasOneHelpAndOneTypeBeforeItsSamples) {
    const std::string text = full_text();
    expect_well_formed(text);
    for (const auto &[name, n] : type_lines(text)) EXPECT_EQ(n, 1) << name;
    EXPECT_TRUE(has_line(text, "# TYPE floodgate_packets_total counter"));
    EXPECT_TRUE(has_line(text, "# TYPE floodgate_rule_shadow gauge"));
}

TEST(Metrics, Status) {
    const std::string text = full_text();
    const char *expected[] = {
        "floodgate_dataplane_up 1",
        "floodgate_control_dataplane_connects_total 3",
        "floodgate_ruleset_version 3",
        "floodgate_ruleset_loaded_timestamp_seconds 1700000100.5",
        "floodgate_ruleset_info{source=\"/etc/fg.yaml\",origin=\"floodctl\"} 1",
        "floodgate_reloads_total{result=\"ok\"} 2",
        "floodgate_reloads_total{result=\"failed\"} 1",
        "floodgate_overrides_expired_total 5",
        "floodgate_control_requests_refused_total 7",
        "floodgate_dataplane_start_timestamp_seconds 1700000000.25",
        "floodgate_workers 2",
    };
    for (const char *line : expected) EXPECT_TRUE(has_line(text, line)) << line << "\n" << text;
}

// The FlowSpec feed's status (control/upstream/flowspec_feed.cpp): asked and read back apart,
// rule by rule; a value of the wrong type drops its sample and never throws.
TEST(Metrics, FlowspecAskedAndInTheRibApart) {
    const json flowspec = {{"active", true},
                           {"asked", 2},
                           {"in_rib", 1},
                           {"missing", 1},
                           {"blackholes_asked", 0},
                           {"blackholes_in_rib", 0},
                           {"blackholes_missing", 0},
                           {"missing_after_add", 3},
                           {"refused_short_source", 4},
                           {"refused_never_block", "five"},
                           {"rules",
                            {{{"match", "match source 198.18.77.0/24 then discard"},
                              {"origin", "block"},
                              {"in_rib", true}},
                             {{"match", "match source 198.18.66.6/32 then discard"},
                              {"origin", "escalated by dns"},
                              {"in_rib", false}},
                             {{"match", 7}, {"in_rib", "yes"}},
                             "not a rule"}}};
    MetricsInput in;
    in.flowspec = &flowspec;
    const std::string text = prometheus_text(in);
    expect_well_formed(text);
    const char *expected[] = {
        "floodgate_flowspec_asked{form=\"flowspec\"} 2",
        "floodgate_flowspec_rules{form=\"flowspec\"} 1",
        "floodgate_flowspec_missing{form=\"flowspec\"} 1",
        "floodgate_flowspec_missing{form=\"rtbh\"} 0",
        "floodgate_flowspec_missing_after_add_total 3",
        "floodgate_flowspec_refused{reason=\"short_source\"} 4",
        "floodgate_flowspec_rule_in_rib{match=\"match source 198.18.77.0/24 then "
        "discard\",origin=\"block\"} 1",
        "floodgate_flowspec_rule_in_rib{match=\"match source 198.18.66.6/32 then "
        "discard\",origin=\"escalated by dns\"} 0",
        "floodgate_flowspec_rule_in_rib{match=\"7\",origin=\"\"} 0",
    };
    for (const char *line : expected) EXPECT_TRUE(has_line(text, line)) << line << "\n" << text;
    EXPECT_EQ(text.find("never_block\"}"), std::string::npos);  // "five" is no number
    EXPECT_EQ(text.find("match=\"\""), std::string::npos);      // "not a rule" is none
}

// Each rule's destinations (control/metrics/destination_metrics.cpp): a limit and headroom only
// where the stats document gives one (key dst); a row without a destination is no sample.
TEST(Metrics, DestinationsAndTheLoadHighSignal) {
    const json stats = {{"rules",
                         {{{"name", "web"},
                           {"load_high", 1},
                           {"load_high_ratio", 4.0},
                           {"keys", 20200.0},
                           {"allowance_per_s", 202000.0},
                           {"matched_per_s", 20200},
                           {"destinations",
                            {{{"destination", "198.18.255.1/32"},
                              {"rate", 20100.0},
                              {"passed_rate", 20100.0},
                              {"baseline", 333.5},
                              {"ratio", 60.25},
                              {"load_high", true}},
                             {{"rate", 5.0}}}}},
                          {{"name", "web-total"},
                           {"destinations",
                            {{{"destination", "198.18.255.2/32"},
                              {"rate", 100.0},
                              {"passed_rate", 100.0},
                              {"limit_per_s", 1000.0},
                              {"headroom", 900.0},
                              {"load_high", false}}}}}}}};
    MetricsInput in;
    in.stats = &stats;
    const std::string text = prometheus_text(in);
    expect_well_formed(text);
    const char *expected[] = {
        "floodgate_destination_rate_packets_per_second{rule=\"web\",destination=\"198.18.255.1/"
        "32\"} 20100",
        "floodgate_destination_baseline_ratio{rule=\"web\",destination=\"198.18.255.1/32\"} 60.25",
        "floodgate_destination_load_high{rule=\"web\",destination=\"198.18.255.1/32\"} 1",
        "floodgate_destination_load_high{rule=\"web-total\",destination=\"198.18.255.2/32\"} 0",
        "floodgate_destination_headroom_packets_per_second{rule=\"web-total\",destination="
        "\"198.18.255.2/32\"} 900",
        "floodgate_rule_load_high_destinations{rule=\"web\"} 1",
        "floodgate_rule_allowance_packets_per_second{rule=\"web\"} 202000",
        "floodgate_rule_matched_packets_per_second{rule=\"web\"} 20200",
    };
    for (const char *line : expected) EXPECT_TRUE(has_line(text, line)) << line << "\n" << text;
    EXPECT_EQ(text.find("floodgate_destination_limit_packets_per_second{rule=\"web\""),
              std::string::npos);  // a per-source rule has no limit per destination
    EXPECT_EQ(text.find("} 5\n"), std::string::npos);  // the row without a destination
}

// The daemon's cluster sync: rounds lost on the way to the dataplane, what one request could
// not carry, and the entries not believed by reason, as its status gives them.
TEST(Metrics, ClusterRoundsLostAndLeftOut) {
    const json status = {{"cluster", {{"configured", true}, {"name", "c"}}}};
    const json daemon = {
        {"store_ok", true},
        {"refused", 4},
        {"left_out", 5},
        {"syncs_refused", 3},
        {"dataplane_failures", 2},
        {"store", {{"bytes", 10}, {"entries_refused", {{"bad_mac", 6}, {"unsigned", 7}}}}}};
    MetricsInput in;
    in.dataplane_up = true;
    in.status = &status;
    in.cluster = &daemon;
    const std::string text = prometheus_text(in);
    expect_well_formed(text);
    const char *expected[] = {
        "floodgate_cluster_refused_total{cluster=\"c\",where=\"store\"} 4",
        "floodgate_cluster_refused_total{cluster=\"c\",where=\"request\"} 5",
        "floodgate_cluster_syncs_lost_total{cluster=\"c\",reason=\"refused\"} 3",
        "floodgate_cluster_syncs_lost_total{cluster=\"c\",reason=\"no_answer\"} 2",
        "floodgate_cluster_entries_refused_total{cluster=\"c\",reason=\"bad_mac\"} 6",
        "floodgate_cluster_entries_refused_total{cluster=\"c\",reason=\"unsigned\"} 7",
    };
    for (const char *line : expected) EXPECT_TRUE(has_line(text, line)) << line << "\n" << text;
}

// What other boxes sent, bounded (issue 42): the dataplane's clamps and the daemon's allows, by
// reason, as their statuses give them.
TEST(Metrics, ClusterBoundedByReason) {
    const json status = {{"cluster",
                          {{"configured", true},
                           {"name", "c"},
                           {"clamped_charges", 2},
                           {"clamped_packets", 999'999'700},
                           {"escalations", {{"over_count", 3}, {"ttl_clamped", 4}}}}}};
    const json daemon = {
        {"allows_bounded",
         {{"off", 5}, {"short", 6}, {"malformed", 7}, {"over_count", 8}, {"ttl_clamped", 9}}}};
    MetricsInput in;
    in.dataplane_up = true;
    in.status = &status;
    in.cluster = &daemon;
    const std::string text = prometheus_text(in);
    expect_well_formed(text);
    const char *expected[] = {
        "floodgate_cluster_bounded_total{cluster=\"c\",what=\"charge\",reason=\"clamped\"} 2",
        "floodgate_cluster_bounded_total{cluster=\"c\",what=\"charge_packets\",reason="
        "\"clamped\"} 999999700",
        "floodgate_cluster_bounded_total{cluster=\"c\",what=\"escalation\",reason="
        "\"over_count\"} 3",
        "floodgate_cluster_bounded_total{cluster=\"c\",what=\"escalation\",reason="
        "\"ttl_clamped\"} 4",
        "floodgate_cluster_bounded_total{cluster=\"c\",what=\"allow\",reason=\"off\"} 5",
        "floodgate_cluster_bounded_total{cluster=\"c\",what=\"allow\",reason=\"short\"} 6",
        "floodgate_cluster_bounded_total{cluster=\"c\",what=\"allow\",reason=\"malformed\"} 7",
        "floodgate_cluster_bounded_total{cluster=\"c\",what=\"allow\",reason=\"over_count\"} 8",
        "floodgate_cluster_bounded_total{cluster=\"c\",what=\"allow\",reason=\"ttl_clamped\"} 9",
    };
    for (const char *line : expected) EXPECT_TRUE(has_line(text, line)) << line << "\n" << text;
}

TEST(Metrics, OverridesCountsBothListsEvenWhenEmpty) {
    const std::string text = full_text();
    EXPECT_TRUE(has_line(text, "floodgate_overrides{list=\"allow\"} 0"));
    EXPECT_TRUE(has_line(text, "floodgate_overrides{list=\"block\"} 2"));

    const json empty = json::parse(R"({"ok": true, "version": 1, "overrides": []})");
    MetricsInput in;
    in.overrides = &empty;
    const std::string none = prometheus_text(in);
    EXPECT_TRUE(has_line(none, "floodgate_overrides{list=\"allow\"} 0"));
    EXPECT_TRUE(has_line(none, "floodgate_overrides{list=\"block\"} 0"));
}

TEST(Metrics, PerCoreCountersComeFromTheXMacro) {
    const std::string text = full_text();
    EXPECT_TRUE(has_line(text, "floodgate_packets_total{core=\"0\"} 1000"));
    EXPECT_TRUE(has_line(text, "floodgate_packets_total{core=\"1\"} 2000"));
    // Every name in the list, for both cores, with the value the test gave it.
    uint64_t n = 100;
    for (const char *core : {"0", "1"})
        for (const std::string &name : kWorkerCounters) {
            const std::string line = "floodgate_" + name + "_total{core=\"" + core + "\"} ";
            if (name != "packets") {  // given its own values above
                EXPECT_TRUE(has_line(text, line + std::to_string(n))) << line;
            }
            ++n;
        }
    const char *expected[] = {
        "floodgate_table_occupancy{core=\"0\"} 3",
        "floodgate_table_capacity{core=\"1\"} 1024",
        "floodgate_table_reclaims_total{core=\"0\"} 4",
        "floodgate_table_full_events_total{core=\"1\"} 5",
        "floodgate_merge_max_lag_seconds{core=\"0\"} 0.0015",
        "floodgate_merge_records_lost_total{core=\"1\"} 6",
        "floodgate_steering_handed_out_total{core=\"0\"} 7",
        "floodgate_steering_taken_in_total{core=\"1\"} 8",
        "floodgate_steering_ring_full_total{core=\"0\"} 9",
        "floodgate_steering_unhashed_total{core=\"0\"} 10",
    };
    for (const char *line : expected) EXPECT_TRUE(has_line(text, line)) << line;
}

TEST(Metrics, StatsWideGauges) {
    const std::string text = full_text();
    const char *expected[] = {
        "floodgate_malformed_by_reason_total{reason=\"ipv4_bad_ihl\"} 7",
        "floodgate_malformed_by_reason_total{reason=\"l4_truncated\"} 8",
        "floodgate_table_bytes_per_entry 32",
        "floodgate_table_memory_bytes 73819904",
        "floodgate_merge_interval_seconds 0.001",
        "floodgate_steering_info{mode=\"software\"} 1",
        "floodgate_steering_nic_refused 1",
    };
    for (const char *line : expected) EXPECT_TRUE(has_line(text, line)) << line;
    EXPECT_EQ(text.find("reason=\"none\""), std::string::npos);
}

TEST(Metrics, Rules) {
    const std::string text = full_text();
    EXPECT_TRUE(has_line(text, "floodgate_rule_refused_total{rule=\"dns\"} 42"));
    for (const std::string &name : kRuleCounters) {
        const std::string metric = "floodgate_rule_" + name + "_total";
        EXPECT_TRUE(has_line(text, metric + "{rule=\"syn\"} 2")) << metric;
        if (name != "refused") {  // given its own value above
            EXPECT_TRUE(has_line(text, metric + "{rule=\"dns\"} 1")) << metric;
        }
    }
    const char *expected[] = {
        "floodgate_rule_shadow{rule=\"dns\"} 0",
        "floodgate_rule_shadow{rule=\"syn\"} 1",
        "floodgate_rule_top_refused_packets{rule=\"dns\",source=\"198.18.1.1/32\"} 40",
        "floodgate_rule_top_refused_packets{rule=\"dns\",source=\"2001:db8::/64\"} 2",
        // count less error: what the summary vouches for
        "floodgate_rule_top_refused_guaranteed_packets{rule=\"dns\",source=\"198.18.1.1/32\"} 40",
        "floodgate_rule_top_refused_guaranteed_packets{rule=\"dns\",source=\"2001:db8::/64\"} 1",
        // counted from samples: less the sampling error too, which is given beside it
        "floodgate_rule_top_refused_guaranteed_packets{rule=\"dns\",source=\"198.18.2.2/32\"} 3084",
        "floodgate_rule_top_refused_sampling_error_packets{rule=\"dns\",source=\"198.18.2.2/32\"} "
        "100",
        "floodgate_rule_top_refused_sampling_error_packets{rule=\"dns\",source=\"2001:db8::/64\"} "
        "0",
    };
    for (const char *line : expected) EXPECT_TRUE(has_line(text, line)) << line;
    EXPECT_EQ(text.find("floodgate_rule_top_refused_packets{rule=\"syn\""), std::string::npos);
    EXPECT_NE(text.find("Space-Saving"), std::string::npos);
}

TEST(Metrics, PortsAndDirections) {
    const std::string text = full_text();
    const char *expected[] = {
        "floodgate_port_rx_packets_total{port=\"0\",role=\"outside\"} 10",
        "floodgate_port_rx_bytes_total{port=\"0\",role=\"outside\"} 640",
        "floodgate_port_rx_missed_total{port=\"0\",role=\"outside\"} 1",
        "floodgate_port_rx_errors_total{port=\"0\",role=\"outside\"} 2",
        "floodgate_port_rx_nombuf_total{port=\"0\",role=\"outside\"} 3",
        "floodgate_port_tx_packets_total{port=\"1\",role=\"inside\"} 9",
        "floodgate_port_tx_bytes_total{port=\"1\",role=\"inside\"} 576",
        "floodgate_port_up{port=\"0\",role=\"outside\"} 1",
        "floodgate_port_up{port=\"1\",role=\"inside\"} 0",
        "floodgate_port_losses_total{port=\"0\",role=\"outside\"} 0",
        "floodgate_port_losses_total{port=\"1\",role=\"inside\"} 2",
        "floodgate_port_tx_errors_total{port=\"1\",role=\"inside\"} 0",
        "floodgate_direction_rx_total{direction=\"outside_to_inside\"} 20",
        "floodgate_direction_tx_total{direction=\"outside_to_inside\"} 9",
        "floodgate_direction_tx_failed_total{direction=\"outside_to_inside\"} 1",
        "floodgate_direction_rx_total{direction=\"inside_to_outside\"} 0",
    };
    for (const char *line : expected) EXPECT_TRUE(has_line(text, line)) << line;
}

TEST(Metrics, TheXdpTierWhenTheDataplaneRunsIt) {
    EXPECT_EQ(full_text().find("floodgate_xdp_"), std::string::npos);  // no tier: no families
    json stats = stats_object();
    stats["xdp"] = {{"iface", "eth0"},
                    {"counters", {{"packets", 100}, {"passed", 60}, {"escalated_hits", 40}}},
                    {"entries", {{"rules", 2}, {"escalated", 1}}},
                    {"escalations",
                     {{"total", 3},
                      {"skipped", 1},
                      {"failed", 0},
                      {"expired", 2},
                      {"sampled",
                       {{"samples_taken", 900},
                        {"samples_lost", 7},
                        {"sources", 12},
                        {"sources_untracked", 0}}}}}};
    MetricsInput in;
    in.dataplane_up = true;
    in.stats = &stats;
    const std::string text = prometheus_text(in);
    const char *expected[] = {
        "floodgate_xdp_frames_total{counter=\"packets\"} 100",
        "floodgate_xdp_frames_total{counter=\"escalated_hits\"} 40",
        "floodgate_xdp_entries{origin=\"escalated\"} 1",
        "floodgate_xdp_escalations_total 3",
        "floodgate_xdp_escalations_skipped_total 1",
        "floodgate_xdp_escalations_expired_total 2",
        "floodgate_xdp_refusal_samples_total 900",
        "floodgate_xdp_refusal_samples_lost_total 7",
        "floodgate_xdp_sampled_sources 12",
        "floodgate_xdp_sampled_sources_untracked_total 0",
    };
    for (const char *line : expected) EXPECT_TRUE(has_line(text, line)) << line << "\n" << text;
}

TEST(Metrics, TheNicTierWhenTheRulesFileHasOne) {
    EXPECT_EQ(full_text().find("floodgate_nic_rules"), std::string::npos);  // no tier: none
    json stats = stats_object();
    stats["nic_tier"] = {
        {"port", "net_memif0"},
        {"max_rules", 100},
        {"rules", 4},
        {"rules_by_origin", {{"block", 1}, {"escalated", 3}}},
        {"inserted", 9},
        {"refused", {{"item", 0}, {"action", 2}, {"attr", 0}, {"full", 1}, {"other", 0}}},
        {"skipped", {{"prefix", 1}, {"allow", 0}}},
        {"withdrawn",
         {{"expired", 1}, {"ttl", 2}, {"unwanted", 0}, {"evicted", 2}, {"stopped", 0}}},
        {"waiting", 5},
        {"destroy_failed", 0},
        {"hits", 700},
        {"bytes", 42000},
        {"flushed_at_start", 1},
        {"flush_failed", 0}};
    MetricsInput in;
    in.dataplane_up = true;
    in.stats = &stats;
    const std::string text = prometheus_text(in);
    const char *expected[] = {
        "floodgate_nic_rules{origin=\"block\"} 1",
        "floodgate_nic_rules{origin=\"escalated\"} 3",
        "floodgate_nic_rules_max 100",
        "floodgate_nic_waiting 5",
        "floodgate_nic_inserted_total 9",
        "floodgate_nic_hits_total 700",
        "floodgate_nic_bytes_total 42000",
        "floodgate_nic_flushes_total 1",
        "floodgate_nic_refused_total{reason=\"action\"} 2",
        "floodgate_nic_refused_total{reason=\"full\"} 1",
        "floodgate_nic_skipped_total{reason=\"prefix\"} 1",
        "floodgate_nic_withdrawn_total{reason=\"evicted\"} 2",
        "floodgate_nic_withdrawn_total{reason=\"ttl\"} 2",
    };
    for (const char *line : expected) EXPECT_TRUE(has_line(text, line)) << line << "\n" << text;
}

TEST(Metrics, EscapesLabelValues) {
    json stats = {{"rules",
                   {{{"name", "dns"},
                     {"mode", "enforce"},
                     {"top_refused", {{{"source", "a\"b\\c\nd"}, {"count", 1}}}}}}}};
    json status = {{"ruleset", {{"source", "C:\\rules \"new\".yaml"}, {"origin", "floodctl"}}}};
    MetricsInput in;
    in.stats = &stats;
    in.status = &status;
    const std::string text = prometheus_text(in);
    EXPECT_TRUE(
        has_line(text, R"(floodgate_rule_top_refused_packets{rule="dns",source="a\"b\\c\nd"} 1)"))
        << text;
    EXPECT_TRUE(has_line(
        text, R"(floodgate_ruleset_info{source="C:\\rules \"new\".yaml",origin="floodctl"} 1)"))
        << text;
    expect_well_formed(text);
}

TEST(Metrics, WrongTypesAndMissingObjectsSkipSamples) {
    json stats = stats_object();
    stats["cores"][0]["packets"] = "1000";            // a string for a number
    stats["cores"][1]["passed"] = true;               // a boolean for a number
    stats["cores"][1]["dropped"] = -5;                // a negative counter
    stats["cores"][1].erase("table");                 // a missing object
    stats["cores"].push_back({{"packets", 1}});       // a core without its index
    stats["cores"].push_back(17);                     // not an object at all
    stats["rules"][0]["refused"] = json::object();    // an object for a number
    stats["rules"][1]["top_refused"] = "none";        // a string for an array
    stats["rules"].push_back({{"mode", "enforce"}});  // a rule without a name
    stats["nic"] = json::object();                    // an object for an array
    stats["ports"]["outside_to_inside"] = json::array();
    stats["malformed_reasons"] = {{"l4_truncated", nullptr}};
    stats["table"] = 3;
    stats["merge"] = {{"interval_ns", "1ms"}};
    stats["steering"] = "software";
    const json status = {{"ruleset", "v3"}, {"reloads", {{"ok", 1.5}}}, {"workers", nullptr}};
    const json overrides = {{"ok", false}, {"error", "no"}};
    MetricsInput in;
    in.dataplane_up = true;
    in.stats = &stats;
    in.status = &status;
    in.overrides = &overrides;
    std::string text;
    ASSERT_NO_THROW(text = prometheus_text(in));
    expect_well_formed(text);

    EXPECT_EQ(text.find("floodgate_packets_total{core=\"0\"}"), std::string::npos);
    EXPECT_TRUE(has_line(text, "floodgate_packets_total{core=\"1\"} 2000"));
    EXPECT_EQ(text.find("floodgate_passed_total{core=\"1\"}"), std::string::npos);
    EXPECT_EQ(text.find("floodgate_dropped_total{core=\"1\"}"), std::string::npos);
    EXPECT_TRUE(has_line(text, "floodgate_table_occupancy{core=\"0\"} 3"));
    EXPECT_EQ(text.find("floodgate_table_occupancy{core=\"1\"}"), std::string::npos);
    EXPECT_EQ(text.find("floodgate_rule_refused_total{rule=\"dns\"}"), std::string::npos);
    EXPECT_TRUE(has_line(text, "floodgate_rule_refused_total{rule=\"syn\"} 2"));
    EXPECT_TRUE(has_line(text, "floodgate_reloads_total{result=\"ok\"} 1.5"));

    // Families left with no sample are still written, HELP and TYPE only.
    const std::map<std::string, int> families = type_lines(text);
    const char *empty[] = {
        "floodgate_port_rx_packets_total",
        "floodgate_table_bytes_per_entry",
        "floodgate_merge_interval_seconds",
        "floodgate_steering_info",
        "floodgate_steering_nic_refused",
        "floodgate_ruleset_version",
        "floodgate_ruleset_info",
        "floodgate_workers",
        "floodgate_overrides",
    };
    for (const char *name : empty) {
        EXPECT_EQ(families.count(name), 1u) << name;
        EXPECT_TRUE(samples_of(text, name).empty()) << name;
    }
    // The reason sent as null is dropped; the ones left out are 0.
    EXPECT_EQ(text.find("reason=\"l4_truncated\""), std::string::npos);
    EXPECT_TRUE(has_line(text, "floodgate_malformed_by_reason_total{reason=\"ipv4_bad_ihl\"} 0"));
    EXPECT_EQ(text.find("direction=\"outside_to_inside\""), std::string::npos);
    EXPECT_TRUE(has_line(text, "floodgate_direction_rx_total{direction=\"inside_to_outside\"} 0"));
}

TEST(Metrics, NonObjectRepliesDoNotThrow) {
    const json values[] = {json(), json(3), json("stats"), json::array({1, 2}), json::object()};
    for (const json &v : values) {
        MetricsInput in;
        in.status = &v;
        in.stats = &v;
        in.overrides = &v;
        std::string text;
        ASSERT_NO_THROW(text = prometheus_text(in)) << v.dump();
        // A reply that is not an object counts as no reply; an empty object as a reply with
        // nothing in it: its families, without samples.
        if (!v.is_object()) {
            EXPECT_EQ(type_lines(text).size(), 2u) << v.dump() << "\n" << text;
        }
        EXPECT_EQ(sample_count(text), 2u) << v.dump() << "\n" << text;
        expect_well_formed(text);
    }
}

TEST(Metrics, EveryMalformedReasonIsThereFromTheFirstScrape) {
    // The dataplane writes only the reasons it has seen: none yet.
    const json nothing_yet = {{"malformed_reasons", json::object()}};
    MetricsInput in;
    in.stats = &nothing_yet;
    std::string text = prometheus_text(in);
    EXPECT_EQ(samples_of(text, "floodgate_malformed_by_reason_total").size(),
              kMalformedReasons.size())
        << text;
    for (const std::string &reason : kMalformedReasons)
        EXPECT_TRUE(
            has_line(text, "floodgate_malformed_by_reason_total{reason=\"" + reason + "\"} 0"))
            << reason << "\n"
            << text;
    EXPECT_EQ(text.find("reason=\"none\""), std::string::npos);

    // Two seen: those two with their counts, every other reason 0.
    text = full_text();
    EXPECT_EQ(samples_of(text, "floodgate_malformed_by_reason_total").size(),
              kMalformedReasons.size());
    for (const std::string &reason : kMalformedReasons) {
        const std::string value = reason == "ipv4_bad_ihl"   ? "7"
                                  : reason == "l4_truncated" ? "8"
                                                             : "0";
        EXPECT_TRUE(has_line(
            text, "floodgate_malformed_by_reason_total{reason=\"" + reason + "\"} " + value))
            << reason;
    }
}

TEST(Metrics, MalformedReasonsListedInFullOrUnknownAreWrittenOnce) {
    // A dataplane that writes every reason, "none" included, and one this build does not know.
    json reasons = json::object();
    reasons["none"] = 0;
    for (const std::string &reason : kMalformedReasons) reasons[reason] = 0;
    reasons["eth_truncated"] = 4;
    reasons["from_a_newer_dataplane"] = 9;
    const json stats = {{"malformed_reasons", reasons}};
    MetricsInput in;
    in.stats = &stats;
    const std::string text = prometheus_text(in);
    expect_well_formed(text);
    const auto samples = samples_of(text, "floodgate_malformed_by_reason_total");
    EXPECT_EQ(samples.size(), kMalformedReasons.size() + 1) << text;
    EXPECT_TRUE(has_line(text, "floodgate_malformed_by_reason_total{reason=\"eth_truncated\"} 4"));
    EXPECT_TRUE(
        has_line(text, "floodgate_malformed_by_reason_total{reason=\"from_a_newer_dataplane\"} 9"));
    EXPECT_EQ(text.find("reason=\"none\""), std::string::npos);
}

TEST(Metrics, TheFamiliesDoNotDependOnTheTraffic) {
    // Replies that hold nothing yet (no rule, core, port or override): the same families as
    // replies full of numbers, so a dashboard or alert never sees one appear.
    const json status = json::object(), overrides = json::object();
    const json stats = {{"malformed_reasons", json::object()},
                        {"rules", json::array()},
                        {"cores", json::array()},
                        {"nic", json::array()}};
    MetricsInput in;
    in.dataplane_up = true;
    in.status = &status;
    in.stats = &stats;
    in.overrides = &overrides;
    const std::string empty = prometheus_text(in);
    expect_well_formed(empty);
    std::vector<std::string> empty_families, full_families;
    for (const auto &[name, n] : type_lines(empty)) empty_families.push_back(name);
    for (const auto &[name, n] : type_lines(full_text())) full_families.push_back(name);
    EXPECT_EQ(empty_families, full_families);
    EXPECT_TRUE(samples_of(empty, "floodgate_rule_top_refused_packets").empty());
    EXPECT_TRUE(has_line(empty, "# TYPE floodgate_rule_top_refused_packets gauge"));
}

}  // namespace
TEST(Metrics, EveryAnswerKindIsThereFromTheFirstScrape) {
    const json stats = {{"answers_by_kind", {{"syn_cookie", 7}}}};
    MetricsInput in;
    in.stats = &stats;
    const std::string text = prometheus_text(in);
    EXPECT_EQ(samples_of(text, "floodgate_answers_by_kind_total").size(), 5u) << text;
    EXPECT_TRUE(has_line(text, "floodgate_answers_by_kind_total{kind=\"syn_cookie\"} 7")) << text;
    for (const char *kind : {"dns_truncated", "tcp_rst", "icmp_unreachable", "syn_proxy"})
        EXPECT_TRUE(
            has_line(text, std::string("floodgate_answers_by_kind_total{kind=\"") + kind + "\"} 0"))
            << kind << "\n"
            << text;
    expect_well_formed(text);
}

}  // namespace floodgate
