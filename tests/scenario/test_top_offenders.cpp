// Top offenders from samples against their exact count (issue 46): twenty sources, each refused
// a known number of times well past the first 1,024 refusals a second that every rule counts
// one by one. The same trace under top_offenders: sampled (the default) and exact: the exact
// view gives the model's counts, the sampled one estimates whose stated error holds them.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "dataplane/api/prefix.h"
#include "tests/scenario/harness.h"
#include "tests/scenario/traffic.h"

namespace floodgate::test {
namespace {

using nlohmann::json;

constexpr unsigned kSources = 20;
constexpr uint64_t kSeconds = 3;

std::string rules(const char *top_offenders) {
    return std::string(R"(rules:
  - name: flood
    match: { proto: udp, dst_port: 53 }
    limit: { rate: 10/s, burst: 5 }
    top_offenders: )") +
           top_offenders + "\n";
}

// Source i (198.18.7.i+1) sends 250 * (i + 1) frames a second, evenly, for kSeconds, and the
// ten heaviest (i >= 10) 2,500 a second more, so that they stand apart: 750 to 22,500 frames
// each, 232,500 in all, about 77,000 refusals a second over the rule.
uint64_t frames_per_second(unsigned i) {
    return 250 * (i + 1) + (i >= 10 ? 2500 : 0);
}
Generator flood() {
    return [](const Sink &sink) {
        std::vector<Flow> flows;
        std::vector<uint64_t> next_ns, period_ns;
        for (unsigned i = 0; i < kSources; ++i) {
            Flow f = flow4("198.18.7.0", kProtoUdp, 53);
            f.src[3] = static_cast<uint8_t>(i + 1);
            flows.push_back(f);
            period_ns.push_back(per_second(frames_per_second(i)));
            next_ns.push_back(kStartNs + i * 1000);
        }
        const uint64_t end_ns = kStartNs + sec(kSeconds);
        for (;;) {
            unsigned first = 0;
            for (unsigned i = 1; i < kSources; ++i)
                if (next_ns[i] < next_ns[first]) first = i;
            if (next_ns[first] >= end_ns) return;
            sink(make_packet(next_ns[first], flows[first]));
            next_ns[first] += period_ns[first];
        }
    };
}

class TopOffenders : public Scenario {
  protected:
    // The rule's top refused sources, each with the model's count beside it.
    struct Row {
        json entry;
        uint64_t truth;
    };
    std::vector<Row> rows() {
        const ModelRuleCounters &model = model_->counters().rules[0];
        std::vector<Row> out;
        for (const json &entry : stats_.at("rules").at(0).at("top_refused")) {
            std::string why;
            const std::optional<Prefix> p = parse_prefix(entry.value("source", ""), &why);
            EXPECT_TRUE(p.has_value()) << why;
            if (!p) continue;
            out.push_back({entry, refused_for(model, SourceKey{p->family, p->addr})});
            // Both views of the same trace, side by side in the test's output.
            std::printf("  %-18s count %6llu error %4llu sampling_error %5llu   truth %6llu\n",
                        entry.value("source", "").c_str(),
                        static_cast<unsigned long long>(u64(entry, "count")),
                        static_cast<unsigned long long>(u64(entry, "error")),
                        static_cast<unsigned long long>(entry.value("sampling_error", 0ull)),
                        static_cast<unsigned long long>(out.back().truth));
        }
        return out;
    }
};

TEST_F(TopOffenders, ExactCountsEveryRefusal) {
    ASSERT_NO_FATAL_FAILURE(run(rules("exact"), flood(), PcapPrecision::nano));
    const std::vector<Row> top = rows();
    ASSERT_EQ(top.size(), 10u);
    for (const Row &r : top) {
        EXPECT_EQ(u64(r.entry, "count"), r.truth) << r.entry.dump();
        EXPECT_EQ(u64(r.entry, "error"), 0u) << r.entry.dump();  // 20 sources, 64 counters
        EXPECT_FALSE(r.entry.contains("sampling_error")) << r.entry.dump();
    }
}

TEST_F(TopOffenders, SampledEstimatesHoldTheTruthWithinTheirError) {
    ASSERT_NO_FATAL_FAILURE(run(rules("sampled"), flood(), PcapPrecision::nano));
    const std::vector<Row> top = rows();
    ASSERT_EQ(top.size(), 10u);
    for (const Row &r : top) {
        const uint64_t count = u64(r.entry, "count"), error = u64(r.entry, "error"),
                       sampling = u64(r.entry, "sampling_error");
        EXPECT_GT(sampling, 0u) << r.entry.dump();  // past the first 1,024 a second: sampled
        EXPECT_EQ(r.entry.value("confidence", 0.0), 0.99) << r.entry.dump();
        EXPECT_LE(count, r.truth + sampling) << r.entry.dump();
        EXPECT_GE(r.truth + error + sampling, count) << r.entry.dump();
        // Some use: the error is a small part of a heavy source's count (under 15%).
        EXPECT_LT(sampling * 100, r.truth * 15) << r.entry.dump();
    }
    // The ten heaviest sources are the ten listed (the lightest of them refused about 15,700
    // times, the next 7,500: far more than the errors apart).
    for (const Row &r : top)
        EXPECT_GE(r.truth, frames_per_second(10) * kSeconds - 100) << r.entry.dump();
}

}  // namespace
}  // namespace floodgate::test
