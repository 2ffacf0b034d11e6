// The rates between two stats readings and the text every reader prints
// (dataplane/api/stats_rates.h, stats_text.h), on documents written here by hand.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "dataplane/api/stats_rates.h"
#include "dataplane/api/stats_text.h"

namespace floodgate {
namespace {

using nlohmann::json;

json reading(uint64_t at_s, uint64_t packets, uint64_t dns_refused, uint64_t rx_bytes) {
    return {{"sampled_ns", at_s * 1000000000ull},
            {"packets", packets},
            {"passed", packets / 2},
            {"dropped", packets - packets / 2},
            {"rules",
             {{{"name", "dns"},
               {"matched", dns_refused},
               {"passed", 0u},
               {"refused", dns_refused},
               {"answered", 0u},
               {"shadow_refused", 0u}}}},
            {"nic",
             {{{"port", 0u},
               {"role", "outside"},
               {"rx_packets", packets},
               {"rx_bytes", rx_bytes},
               {"tx_packets", 0u},
               {"tx_bytes", 0u},
               {"rx_missed", 0u},
               {"rx_errors", 0u},
               {"tx_errors", 0u}}}}};
}

TEST(StatsRates, DifferencesOverTheDataplanesClock) {
    const json r = stats_rates(reading(10, 1000, 400, 64000), reading(12, 5000, 2400, 320000));
    ASSERT_TRUE(r.is_object());
    EXPECT_DOUBLE_EQ(r["interval_s"].get<double>(), 2.0);
    EXPECT_DOUBLE_EQ(r["packets"].get<double>(), 2000.0);  // (5000 - 1000) / 2 s
    EXPECT_DOUBLE_EQ(r["passed"].get<double>(), 1000.0);
    ASSERT_EQ(r["rules"].size(), 1u);
    EXPECT_DOUBLE_EQ(r["rules"][0]["refused"].get<double>(), 1000.0);
    EXPECT_DOUBLE_EQ(r["rules"][0]["passed"].get<double>(), 0.0);
    ASSERT_EQ(r["ports"].size(), 1u);
    EXPECT_DOUBLE_EQ(r["ports"][0]["rx_pps"].get<double>(), 2000.0);
    EXPECT_DOUBLE_EQ(r["ports"][0]["rx_bps"].get<double>(), (320000 - 64000) * 8 / 2.0);
    EXPECT_DOUBLE_EQ(r["ports"][0]["errors_pps"].get<double>(), 0.0);
}

TEST(StatsRates, EachDirectionOfTheWorkersFrames) {
    json before = reading(10, 1000, 400, 64000), after = reading(12, 5000, 2400, 320000);
    before["ports"] = {{"inside_to_outside", {{"rx", 100u}, {"tx", 90u}, {"tx_failed", 10u}}}};
    after["ports"] = {{"inside_to_outside", {{"rx", 700u}, {"tx", 650u}, {"tx_failed", 50u}}},
                      {"answers_to_outside", {{"rx", 0u}, {"tx", 4u}, {"tx_failed", 0u}}}};
    const json r = stats_rates(before, after);
    const json &d = r["directions"]["inside_to_outside"];
    EXPECT_DOUBLE_EQ(d["rx_pps"].get<double>(), 300.0);  // (700 - 100) / 2 s
    EXPECT_DOUBLE_EQ(d["tx_pps"].get<double>(), 280.0);
    EXPECT_DOUBLE_EQ(d["tx_failed_pps"].get<double>(), 20.0);
    EXPECT_FALSE(r["directions"].contains("answers_to_outside"));  // nothing to compare with
    const json s = stats_rates_since_start(after, 2.0);
    EXPECT_DOUBLE_EQ(s["directions"]["answers_to_outside"]["tx_pps"].get<double>(), 2.0);
}

TEST(StatsRates, WhatWentDownOrIsNewIsLeftOut) {
    json before = reading(10, 1000, 400, 64000), after = reading(11, 500, 600, 64000);
    after["rules"].push_back({{"name", "new"}, {"matched", 5u}});
    const json r = stats_rates(before, after);
    EXPECT_FALSE(r.contains("packets"));  // 1000 -> 500: a restart, not a rate
    EXPECT_DOUBLE_EQ(r["rules"][0]["refused"].get<double>(), 200.0);
    ASSERT_EQ(r["rules"].size(), 1u);                   // "new" has nothing to be compared with
    EXPECT_TRUE(stats_rates(after, after).is_null());   // no time between them
    EXPECT_TRUE(stats_rates(after, before).is_null());  // time ran backwards
}

TEST(StatsRates, SinceTheStartIsOverTheUptime) {
    json s = reading(3, 900, 300, 0);
    const json r = stats_rates_since_start(s, 3.0);
    EXPECT_DOUBLE_EQ(r["interval_s"].get<double>(), 3.0);
    EXPECT_DOUBLE_EQ(r["packets"].get<double>(), 300.0);
    EXPECT_DOUBLE_EQ(r["rules"][0]["refused"].get<double>(), 100.0);
    EXPECT_DOUBLE_EQ(r["ports"][0]["rx_pps"].get<double>(), 300.0);
    // A dataplane that has not been up for any time yet has no rates to give.
    EXPECT_TRUE(stats_rates_since_start(s, 0.0).is_null());
}

TEST(StatsText, TopRefusedCountsShowOnlyWhatTheSummaryVouchesFor) {
    EXPECT_EQ(refused_bound_text({{"count", 1200}, {"error", 0}}), "1200");
    // The pktgen case of issue 14: 525 frames per source, the summary's error 163499.
    EXPECT_EQ(refused_bound_text({{"count", 163500}, {"error", 163499}}),
              "at least 1, at most 163500");
    // Counted from samples: the estimate's centre, its sampling error and half Space-Saving's.
    EXPECT_EQ(refused_bound_text(
                  {{"count", 52016}, {"error", 16}, {"sampling_error", 942}, {"confidence", 0.99}}),
              "about 52008, +-950 at confidence 99%");
    json stats = reading(1, 10, 4, 0);
    stats["rules"][0]["mode"] = "enforce";
    stats["rules"][0]["top_refused"] = {{{"source", "198.18.1.1/32"}, {"count", 9}, {"error", 5}}};
    const std::string text = stats_text(stats);
    EXPECT_NE(text.find("top refused, rule dns:"), std::string::npos) << text;
    EXPECT_NE(text.find("198.18.1.1/32"), std::string::npos);
    EXPECT_NE(text.find("refused at least 4, at most 9"), std::string::npos) << text;
    EXPECT_EQ(text.find("refused 9\n"), std::string::npos) << text;
}

TEST(StatsText, NoRatesIsSaid) {
    EXPECT_EQ(rates_text(nullptr), "  no rates yet\n");
    // Documents without the fields the text names (an older dataplane, a partial reply).
    EXPECT_NE(stats_text(json::object()).find("packets 0"), std::string::npos);
    EXPECT_NE(stats_text({{"xdp", {{"iface", "eth0"}}}}).find("xdp on eth0: frames 0"),
              std::string::npos);
}

TEST(StatsText, RatesLinesNameEveryRuleAndPort) {
    const std::string text =
        rates_text(stats_rates(reading(10, 1000, 400, 64000), reading(12, 5000, 2400, 320000)));
    EXPECT_NE(text.find("decided 2.00 kpps"), std::string::npos) << text;
    EXPECT_NE(text.find("rule dns"), std::string::npos) << text;
    EXPECT_NE(text.find("port 0 (outside): rx 2.00 kpps"), std::string::npos) << text;
}

TEST(StatsText, LostPortsAreNamedAndOthersAreNot) {
    json stats = reading(1, 10, 4, 0);
    stats["nic"] = {{{"port", 0}, {"role", "outside"}, {"link", "up"}, {"losses", 0}},
                    {{"port", 1}, {"role", "inside"}, {"link", "down"}, {"losses", 1}},
                    {{"port", 2}, {"role", "spare"}, {"link", "up"}, {"losses", 3}}};
    const std::string text = stats_text(stats);
    EXPECT_EQ(text.find("port 0"), std::string::npos) << text;
    EXPECT_NE(text.find("port 1 (inside): link down, lost 1 time\n"), std::string::npos) << text;
    EXPECT_NE(text.find("port 2 (spare): link up, lost 3 times\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace floodgate
