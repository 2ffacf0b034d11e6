// The XDP program's own cost per frame (bpf/floodgate_xdp.bpf.c), as the kernel measures it:
// BPF_PROG_TEST_RUN runs it `repeat` times on one frame and reports the mean time per run
// (which includes the test run's own per-repeat overhead, a few ns). Regimes: a source in no
// map (passed), an escalated /32 (dropped), each with the block map empty but for the one
// entry, and with 100,000 other /32s and /24s around it; IPv6 with 100,000 /64s. The baseline,
// BM_XdpBaseline, is a program that only returns XDP_PASS, run the same way: the difference is
// the program's own work. Needs root.
#include <benchmark/benchmark.h>
#include <bpf/bpf.h>
#include <linux/bpf.h>
#include <unistd.h>

#include <memory>
#include <string>

#include "bpf/xdp_tier.h"
#include "tests/pkt_builder.h"

namespace floodgate {
namespace {

constexpr int kRepeat = 100000;

Prefix prefix(const std::string &text) {
    std::string why;
    return parse_prefix(text, &why).value();
}

// One program with `others` entries besides the escalated source 198.18.66.6 (IPv4) or
// 2001:db8:66:6::/64 (IPv6).
std::unique_ptr<XdpTier> tier_with(int others, bool ipv6) {
    XdpOptions o;
    o.pin_dir.clear();
    std::string error;
    std::unique_ptr<XdpTier> t = XdpTier::load(o, &error);
    if (!t) return nullptr;
    for (int i = 0; i < others; ++i) {
        char text[64];
        if (ipv6)
            std::snprintf(text, sizeof text, "2001:db8:%x:%x::/64", 0x100 + i / 65536, i % 65536);
        else if (i % 2 == 0)
            std::snprintf(text, sizeof text, "198.19.%d.%d/32", (i / 256) % 256, i % 256);
        else
            std::snprintf(text, sizeof text, "10.%d.%d.0/24", (i / 256) % 256, i % 256);
        t->put({prefix(text), FG_XDP_ORIGIN_rules, false, 0}, &error);
    }
    t->put(
        {prefix(ipv6 ? "2001:db8:66:6::/64" : "198.18.66.6/32"), FG_XDP_ORIGIN_escalated, false, 0},
        &error);
    return t;
}

// Runs prog_fd on frame; false when the kernel refuses or the verdict is not `verdict`.
bool timed_runs(benchmark::State &state, int prog_fd, test::Frame &frame, __u32 verdict) {
    for (auto _ : state) {
        LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame.data(),
                    .data_size_in = static_cast<__u32>(frame.size()), .repeat = kRepeat);
        if (bpf_prog_test_run_opts(prog_fd, &opts) != 0 || opts.retval != verdict) {
            state.SkipWithError("BPF_PROG_TEST_RUN failed or gave another verdict");
            return false;
        }
        state.SetIterationTime(static_cast<double>(opts.duration) * kRepeat * 1e-9);
    }
    state.SetItemsProcessed(state.iterations() * kRepeat);
    state.counters["ns_per_frame"] =
        benchmark::Counter(static_cast<double>(state.iterations() * kRepeat),
                           benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
    return true;
}

void BM_XdpBaseline(benchmark::State &state) {
    const bpf_insn insns[] = {
        {BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, XDP_PASS},  // r0 = XDP_PASS
        {BPF_JMP | BPF_EXIT, 0, 0, 0, 0},
    };
    const int fd = bpf_prog_load(BPF_PROG_TYPE_XDP, "fg_xdp_pass", "GPL", insns, 2, nullptr);
    if (fd < 0) {
        state.SkipWithError("the kernel does not load BPF programs here (root?)");
        return;
    }
    test::Frame frame =
        test::PacketBuilder().ipv4("198.18.1.10", "198.18.1.1").udp(1000, 53).build();
    timed_runs(state, fd, frame, XDP_PASS);
    close(fd);
}
BENCHMARK(BM_XdpBaseline)->UseManualTime()->Unit(benchmark::kNanosecond);

void BM_XdpProgram(benchmark::State &state) {
    const bool ipv6 = state.range(2) != 0, escalated = state.range(1) != 0;
    std::unique_ptr<XdpTier> t = tier_with(static_cast<int>(state.range(0)), ipv6);
    if (!t) {
        state.SkipWithError("the kernel does not load BPF programs here (root?)");
        return;
    }
    const std::string src = ipv6 ? (escalated ? "2001:db8:66:6::1" : "2001:db8:1::10")
                                 : (escalated ? "198.18.66.6" : "198.18.1.10");
    test::Frame frame = ipv6
                            ? test::PacketBuilder().ipv6(src, "2001:db8:1::1").udp(1000, 53).build()
                            : test::PacketBuilder().ipv4(src, "198.18.1.1").udp(1000, 53).build();
    timed_runs(state, t->program_fd(), frame, escalated ? XDP_DROP : XDP_PASS);
}
// {other entries, escalated source, IPv6}
BENCHMARK(BM_XdpProgram)
    ->ArgNames({"entries", "escalated", "ipv6"})
    ->Args({0, 0, 0})
    ->Args({0, 1, 0})
    ->Args({100000, 0, 0})
    ->Args({100000, 1, 0})
    ->Args({100000, 0, 1})
    ->Args({100000, 1, 1})
    ->UseManualTime()
    ->Unit(benchmark::kNanosecond);

}  // namespace
}  // namespace floodgate

BENCHMARK_MAIN();
