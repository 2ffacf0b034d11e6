// The cross-core merge bound, checked exactly on packet time with `floodgate replay --workers
// N --spread rr`: one source flooding far over its limit, spread round robin over N virtual
// cores merged every M. For every window of time, the packets passed may exceed what one GCRA
// allows in that window (burst + floor(window / T)) by at most (N - 1) x (burst + ceil(M / T)):
// docs/design.md's bound. The allowance is computed here from the passed timestamps alone.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <thread>

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
        return worst_gcra_excess(path("pass" + suffix + ".pcap"), kBurst, kIntervalNs);
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

// Five cores each admit a whole burst of a 1/h, burst 2^20 rule before their first merge; the
// merge then charges each one the other four's bursts: 5 x 2^20 x 3.6e12 ns = 1.9e19, past
// 2^64. A TAT that wrapped there would read as long expired and the flood would get a fresh
// burst on every core; saturated, every later packet is refused.
TEST_F(MergeBound, MergedChargesPastTwoToTheSixtyFourSaturate) {
    constexpr unsigned kCores = 5;
    constexpr uint64_t kBurstPkts = 1u << 20;
    constexpr uint64_t kLater = 5000;
    write_text("rules.yaml",
               "table: { entries_per_core: 1024 }\nrules:\n  - name: slow\n"
               "    limit: { rate: 1/h, burst: 1048576 }\n");
    // 5 x 2^20 frames are 300 MB of pcap: streamed through a FIFO rather than written to disk.
    const std::string fifo = path("trace.pcap");
    ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
    std::signal(SIGPIPE, SIG_IGN);  // replay may stop reading early (a failure is reported below)
    std::thread writer([&] {
        const int fd =
            open(fifo.c_str(), O_WRONLY);  // until replay (or the unblock below) opens it
        if (fd < 0) return;
        const Frame f = PacketBuilder().ipv4("198.18.5.5", "198.18.100.53").udp(4000, 53).build();
        std::vector<uint8_t> out;
        const uint32_t header[6] = {kPcapMagicNano, 2u | 4u << 16, 0, 0, 65535, kLinktypeEthernet};
        out.insert(out.end(), reinterpret_cast<const uint8_t *>(header),
                   reinterpret_cast<const uint8_t *>(header) + sizeof header);
        auto record = [&](uint64_t ts_ns) {
            const uint32_t h[4] = {static_cast<uint32_t>(ts_ns / 1000000000),
                                   static_cast<uint32_t>(ts_ns % 1000000000),
                                   static_cast<uint32_t>(f.size()),
                                   static_cast<uint32_t>(f.size())};
            out.insert(out.end(), reinterpret_cast<const uint8_t *>(h),
                       reinterpret_cast<const uint8_t *>(h) + sizeof h);
            out.insert(out.end(), f.begin(), f.end());
        };
        auto flush = [&] {
            for (size_t done = 0; done < out.size();) {
                const ssize_t n = write(fd, out.data() + done, out.size() - done);
                if (n <= 0) return false;
                done += static_cast<size_t>(n);
            }
            out.clear();
            return true;
        };
        bool ok = true;
        // Every frame of the bursts within 0.6 s, before the first merge (10 s).
        for (uint64_t i = 0; ok && i < kCores * kBurstPkts; ++i) {
            record(1000000000 + i * 100);
            if (out.size() > (1u << 20)) ok = flush();
        }
        for (uint64_t i = 0; ok && i < kLater; ++i) record(30000000000ull + i * 1000);
        if (ok) flush();
        close(fd);
    });
    ProcessResult r = run_process(
        {floodgate_bin(), "replay", "--config", path("rules.yaml"), "--in", fifo, "--pass",
         "/dev/null", "--stats", path("stats.json"), "--workers", std::to_string(kCores),
         "--spread", "rr", "--merge-interval-us", "10000000", "--quiet"},
        dir_);
    // If replay never opened the FIFO, opening its read end lets the writer finish.
    const int unblock = open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
    if (unblock >= 0) close(unblock);
    writer.join();
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json stats = nlohmann::json::parse(read_file(path("stats.json")));
    const nlohmann::json &rule = stats["rules"][0];
    EXPECT_EQ(u64(rule, "matched"), kCores * kBurstPkts + kLater);
    EXPECT_EQ(u64(rule, "passed"), kCores * kBurstPkts);  // each core's burst, once
    EXPECT_EQ(u64(rule, "refused"), kLater);              // and nothing after the merge
}

}  // namespace
}  // namespace floodgate::test
