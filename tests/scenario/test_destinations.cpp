// The seeds' botnet as floodgate's destinations show it (docs/replay.md, "Destinations"): 20,000
// sources, each far under its per-source limit, toward one destination for three seconds, over
// a baseline of 100 packets a second. No limit refuses anything, so the refusal counters and
// top lists show nothing; the signal "load high, no key over its limit" names the destination.
// Every figure is checked against counts the test keeps of the trace itself (per destination
// and second), and the baseline against the test's own exponential average.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "tests/scenario/harness.h"
#include "tests/scenario/traffic.h"

namespace floodgate::test {
namespace {

constexpr const char *kRules = R"(rules:
  - name: per_source
    match: { proto: udp, dst_port: 53 }
    limit: { rate: 10/s, burst: 5 }
  - name: per_destination
    match: { proto: udp, dst_port: 53 }
    key: { dst: { ipv4: 32, ipv6: 64 } }
    limit: { rate: 1000000/s, burst: 100000 }
)";

Flow query(const IpAddr &src, const IpAddr &dst, uint16_t port) {
    return {
        .family = 4, .src = src, .dst = dst, .proto = kProtoUdp, .src_port = port, .dst_port = 53};
}

IpAddr host(uint8_t net, uint32_t i) {
    IpAddr a{};
    a[0] = net == 0 ? 198 : 10;
    a[1] = net == 0 ? 19 : net;
    a[2] = static_cast<uint8_t>(i >> 8);
    a[3] = static_cast<uint8_t>(i);
    return a;
}

// docs/replay.md's baseline, written again here: the first second a destination is seen in sets
// nothing, the next sets it, each later one moves it 1/256 of the way.
struct Baseline {
    double value = 0;
    unsigned seconds = 0;
    void add(double rate) {
        if (seconds == 1) value = rate;
        if (seconds > 1) value += (rate - value) / 256;
        ++seconds;
    }
};

TEST_F(Scenario, BotnetUnderEverySourceLimitRaisesTheDestinationSignal) {
    const IpAddr target = kDst4, quiet = a4("198.18.255.2");
    constexpr uint64_t kSeconds = 15, kFloodFrom = 12, kBots = 20'000;
    Traffic tr;
    // 100 clients of each destination, one query a second each, all along.
    for (uint32_t i = 0; i < 100; ++i) {
        tr.every(kStartNs + i * ms(10), sec(1), kSeconds,
                 query(host(1, i), target, static_cast<uint16_t>(1024 + i)));
        tr.every(kStartNs + i * ms(10) + ms(5), sec(1), kSeconds,
                 query(host(2, i), quiet, static_cast<uint16_t>(1024 + i)));
    }
    // The botnet: each source one query a second (its limit is 10), for three seconds.
    for (uint32_t j = 0; j < kBots; ++j)
        tr.every(kStartNs + sec(kFloodFrom) + j * 50 * kNsPerUs, sec(1), kSeconds - kFloodFrom,
                 query(host(0, j), target, static_cast<uint16_t>(2000 + j % 60000)));
    // One more query half a second on, so that the clock ends the last flooded second.
    tr.every(kStartNs + sec(kSeconds) + ms(500), sec(1), 1, query(host(2, 0), quiet, 1024));
    const Generator gen = tr.generator(PcapPrecision::nano);

    // The trace's own counts: packets and passed packets per (destination, second), and the
    // sources and destinations of each second (every packet is UDP/53: both rules match it).
    std::map<std::pair<IpAddr, uint64_t>, uint64_t> offered, passed;
    std::map<uint64_t, std::set<IpAddr>> sources, destinations;
    const Observer obs = [&](const GenPacket &p, const ModelDecision &d) {
        const uint64_t second = (p.info.ts_ns - kStartNs) / kNsPerSec;
        const auto at = std::make_pair(p.info.dst, second);
        ++offered[at];
        if (d.pass) ++passed[at];
        sources[second].insert(p.info.src);
        destinations[second].insert(p.info.dst);
    };
    ASSERT_NO_FATAL_FAILURE(run(kRules, gen, PcapPrecision::nano, obs));
    const auto at = [](auto &counts, const IpAddr &dst, uint64_t second) {
        return counts[std::make_pair(dst, second)];
    };
    const uint64_t last = kSeconds - 1;  // the last whole second the reading shows
    EXPECT_EQ(at(offered, target, last), 100 + kBots);
    EXPECT_EQ(at(passed, target, last), 100 + kBots) << "no limit refuses the botnet";
    Baseline target_baseline, quiet_baseline;
    for (uint64_t s = 0; s <= last; ++s) {
        target_baseline.add(static_cast<double>(at(offered, target, s)));
        quiet_baseline.add(static_cast<double>(at(offered, quiet, s)));
    }

    for (const nlohmann::json &rule : stats_["rules"]) {
        SCOPED_TRACE(rule["name"].get<std::string>());
        EXPECT_EQ(rule["refused"], 0u);
        EXPECT_EQ(rule["load_high"], 1u) << "one destination raises the signal";
        EXPECT_EQ(rule["destinations_epoch_end_ns"], kStartNs + sec(kSeconds));
        const nlohmann::json &rows = rule["destinations"];
        ASSERT_EQ(rows.size(), 2u);
        const nlohmann::json &d = rows[0], &q = rows[1];
        EXPECT_EQ(d["destination"], "198.18.255.1/32");
        EXPECT_EQ(d["rate"].get<double>(), static_cast<double>(at(offered, target, last)));
        EXPECT_EQ(d["passed_rate"].get<double>(), static_cast<double>(at(passed, target, last)));
        EXPECT_NEAR(d["baseline"].get<double>(), target_baseline.value, 1e-9);
        EXPECT_EQ(d["epochs"], target_baseline.seconds);
        EXPECT_NEAR(d["ratio"].get<double>(),
                    static_cast<double>(at(offered, target, last)) / target_baseline.value, 1e-9);
        EXPECT_TRUE(d["load_high"].get<bool>());
        EXPECT_EQ(q["destination"], "198.18.255.2/32");
        EXPECT_EQ(q["rate"].get<double>(), 100.0);
        EXPECT_NEAR(q["baseline"].get<double>(), quiet_baseline.value, 1e-9);
        EXPECT_FALSE(q["load_high"].get<bool>());
        // What the limits allow in sum: the keys of that second, counted exactly by replay,
        // times the rule's rate, against what it matched.
        const bool per_source = rule["name"] == "per_source";
        const size_t keys = per_source ? sources[last].size() : destinations[last].size();
        EXPECT_EQ(keys, per_source ? 100 + 100 + kBots : 2);
        EXPECT_EQ(rule["keys"].get<double>(), static_cast<double>(keys));
        EXPECT_EQ(rule["keys_error"].get<double>(), 0.0);
        EXPECT_EQ(rule["allowance_per_s"].get<double>(),
                  rule["keys"].get<double>() * (per_source ? 10 : 1e6));
        EXPECT_EQ(rule["matched_per_s"].get<uint64_t>(),
                  at(offered, target, last) + at(offered, quiet, last));
        if (rule["name"] == "per_destination") {
            EXPECT_EQ(d["limit_per_s"].get<double>(), 1e6);
            EXPECT_EQ(d["headroom"].get<double>(), 1e6 - (100 + kBots));
        } else {
            EXPECT_FALSE(d.contains("limit_per_s")) << "a per-source rule has no such limit";
        }
    }

    // Over two cores (the sources steered apart, the destination key shared), the same
    // figures; and the report shows them: the target's row, signalled.
    const ProcessResult r =
        run_process({floodgate_bin(), "replay", "--config", path("rules.yaml"), "--in",
                     path("trace.pcap"), "--pass", path("again.pcap"), "--stats",
                     path("again.json"), "--report", path("report.html"), "--workers", "2"},
                    dir_);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json again = nlohmann::json::parse(read_file(path("again.json")));
    for (size_t i = 0; i < 2; ++i) {
        // Keys on both cores (the destinations) counted once: the count is a union.
        EXPECT_EQ(again["rules"][i]["keys"], stats_["rules"][i]["keys"]);
        EXPECT_EQ(again["rules"][i]["allowance_per_s"], stats_["rules"][i]["allowance_per_s"]);
    }
    for (size_t i = 0; i < 2; ++i)
        for (size_t j = 0; j < 2; ++j) {
            const nlohmann::json &one = stats_["rules"][i]["destinations"][j];
            const nlohmann::json &two = again["rules"][i]["destinations"][j];
            EXPECT_EQ(two["destination"], one["destination"]);
            EXPECT_EQ(two["rate"], one["rate"]);
            EXPECT_EQ(two["passed_rate"], one["passed_rate"]);
            EXPECT_NEAR(two["baseline"].get<double>(), one["baseline"].get<double>(), 1e-6);
            EXPECT_EQ(two["load_high"], one["load_high"]);
        }
    const std::string html = read_file(path("report.html"));
    EXPECT_NE(html.find("<tr class=\"destination high\"><td><code>198.18.255.1/32</code></td>"
                        "<td class=\"num\">20100.00</td><td class=\"num\">20100.00</td>"),
              std::string::npos);
    EXPECT_NE(html.find("<tr class=\"destination\"><td><code>198.18.255.2/32</code></td>"
                        "<td class=\"num\">100.00</td>"),
              std::string::npos);
}

}  // namespace
}  // namespace floodgate::test
