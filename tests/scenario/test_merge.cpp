// The cross-core merge bound, checked exactly on packet time with `floodgate replay --workers
// N --spread rr`: one source flooding far over its limit, spread round robin over N virtual
// cores merged every M. For every window of time, the packets passed may exceed what one GCRA
// allows in that window (burst + floor(window / T)) by at most (N - 1) x (burst + ceil(M / T)):
// the README's bound. The allowance is computed here from the passed timestamps alone.
#include <gtest/gtest.h>

#include <algorithm>

#include "tests/pcap_io.h"
#include "tests/pkt_builder.h"
#include "tests/scenario/harness.h"

namespace floodgate::test {
namespace {

constexpr uint64_t kMs = 1000000;
constexpr uint64_t kIntervalNs = 100 * kMs;  // 10/s
constexpr int64_t kBurst = 5;
constexpr uint64_t kMergeNs = 1 * kMs;

class MergeBound : public Scenario {
  protected:
    // Three episodes of 1 s at 20,000 packets/s, 2 s apart (so every core starts each one
    // with a full burst), from one source.
    void write_flood() {
        PcapWriter w(path("trace.pcap"), PcapPrecision::nano);
        const Frame f =
            PacketBuilder().ipv4("198.18.5.5", "198.18.100.53").udp(4000, 53).payload(20).build();
        for (uint64_t episode = 0; episode < 3; ++episode)
            for (uint64_t i = 0; i < 20000; ++i) w.write(kMs + episode * 3000 * kMs + i * 50000, f);
        w.close();
        write_text("rules.yaml",
                   "rules:\n  - name: dns\n    match: { proto: udp, dst_port: 53 }\n"
                   "    limit: { rate: 10/s, burst: 5 }\n");
    }

    // Largest (passed in [t_i, t_j]) - (burst + floor((t_j - t_i) / T)) over all windows.
    int64_t worst_excess(unsigned workers) {
        std::string suffix = "-" + std::to_string(workers);
        ProcessResult r = run_process(
            {floodgate_bin(), "replay", "--config", path("rules.yaml"), "--in", path("trace.pcap"),
             "--pass", path("pass" + suffix + ".pcap"), "--workers", std::to_string(workers),
             "--spread", "rr", "--merge-interval-us", std::to_string(kMergeNs / 1000), "--quiet"},
            dir_);
        EXPECT_EQ(r.exit_code, 0) << r.err;
        std::vector<uint64_t> t;
        for (const PcapRecord &rec : read_pcap(path("pass" + suffix + ".pcap")).records)
            t.push_back(rec.ts_ns);
        int64_t worst = INT64_MIN;
        for (size_t i = 0; i < t.size(); ++i)
            for (size_t j = i; j < t.size(); ++j) {
                int64_t allowed = kBurst + static_cast<int64_t>((t[j] - t[i]) / kIntervalNs);
                worst = std::max(worst, static_cast<int64_t>(j - i + 1) - allowed);
            }
        return worst;
    }
};

TEST_F(MergeBound, OneCoreIsExactlyOneGcra) {
    write_flood();
    EXPECT_EQ(worst_excess(1), 0);
}

TEST_F(MergeBound, SeveralCoresStayWithinTheBound) {
    write_flood();
    const int64_t per_core =
        kBurst + static_cast<int64_t>((kMergeNs + kIntervalNs - 1) / kIntervalNs);
    for (unsigned n : {2u, 4u}) {
        int64_t excess = worst_excess(n);
        EXPECT_LE(excess, static_cast<int64_t>(n - 1) * per_core) << n << " cores";
        // The bound is not idle talk: every core does spend its own burst before it hears of
        // the others.
        EXPECT_GE(excess, static_cast<int64_t>(n - 1) * kBurst) << n << " cores";
    }
}

}  // namespace
}  // namespace floodgate::test
