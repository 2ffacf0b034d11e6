// The rules bench_decision's benchmarks decide with (perf/bench_decision.cpp says what each
// measures): the per-source and aggregate mixes of BM_Decide*, the SYN rule of BM_SynFlood and
// BM_ProxyEstablished, the shape and drop rules of BM_Shape, the adaptive SYN rule of
// BM_SynAdaptive, and the arguments that choose among them.
#pragma once

#include <algorithm>
#include <cstdint>

#include "dataplane/api/rules.h"

namespace floodgate::bench::mixes {

// admit: every packet passes (burst 2^20, so no key runs out within the run) and commits a
// new TAT. refuse: burst 1, so after the warm-up every packet is refused (a flood from every
// key), which also feeds the top-offenders summary.
enum Regime : int64_t { kAdmit = 0, kRefuse = 1 };

// prefixes: how many the rule's src list holds. 1 is 10.0.0.0/8, which holds every source;
// 100,000 are the 65,536 /24s of 10.0.0.0/8 and 34,464 /32s of 11.0.0.0/8 that no source hits.
// none: no rule at all, the path before any decision (case 1's I/O floor, perf-no-rules.yaml).
enum Rules : int64_t { kPerSource = 0, kAggregate = 1, kBoth = 2, kNone = 3 };

inline Config bench_config(uint64_t keys, Regime regime, unsigned prefixes = 0,
                           Rules rules = kPerSource) {
    Config c;
    c.table_entries_per_core = keys;
    Rule r;
    auto add = [&](uint32_t addr, uint8_t len) {
        Prefix p;
        p.family = 4;
        p.len = len;
        p.addr[0] = addr >> 24, p.addr[1] = addr >> 16 & 0xff, p.addr[2] = addr >> 8 & 0xff;
        p.addr[3] = addr & 0xff;
        r.match.src.push_back(p);
    };
    if (prefixes == 1) add(0x0a000000u, 8);
    for (uint32_t i = 0; prefixes > 1 && i < prefixes; ++i)
        i < 65536 ? add(0x0a000000u + (i << 8), 24) : add(0x0b000000u + i, 32);
    r.name = "all";
    r.rate_count = 1;
    r.rate_period_ns = 60ull * 1000000000;  // 1/min: every key stays live for the whole run
    r.burst_pkts = regime == kAdmit ? kMaxBurstPkts : 1;
    Rule total = r;
    total.name = "total";
    total.key_kind = KeyKind::dst;
    if (regime == kAdmit) {  // 10^9/s: one packet per virtual nanosecond, all admitted
        total.rate_count = 1000000000;
        total.rate_period_ns = 1000000000;
    }
    if (rules == kBoth) r.burst_pkts = kMaxBurstPkts;  // the aggregate rule is the one refusing
    if (rules == kPerSource || rules == kBoth) c.rules.push_back(r);
    if (rules == kAggregate || rules == kBoth) c.rules.push_back(total);
    return c;
}

enum SynRegime : int64_t { kSynCopy = 0, kSynDrop = 1, kSynAnswer = 2, kSynProxy = 3 };

// syn-proxy's connection table, where a benchmark has one: the default size.
inline constexpr uint32_t kProxyConnections = 1 << 16;

// One rule on SYNs to port 80, as a deployment would write it ("syn !ack"): drop, syn-auth or
// syn-proxy.
inline Config syn_config(SynRegime regime) {
    Config c;
    c.table_entries_per_core = 1 << 20;
    Rule r;
    r.name = "syn";
    r.match.tcp_flags.must_set = 0x02;    // SYN
    r.match.tcp_flags.must_clear = 0x10;  // ACK
    r.match.dst_ports.push_back(PortRange{80, 80});
    r.rate_count = 1;
    r.rate_period_ns = 60ull * 1000000000;  // 1/min, burst 1: a source's second SYN is refused
    r.burst_pkts = 1;
    r.action = regime == kSynAnswer  ? RuleAction::syn_auth
               : regime == kSynProxy ? RuleAction::syn_proxy
                                     : RuleAction::drop;
    c.rules.push_back(r);
    // Caps that never bind: 10^9 answers/s (one per virtual nanosecond) with bursts of 2^20.
    c.answers.per_destination = RateLimit{1000000000, 1000000000, kMaxBurstPkts};
    c.answers.per_core = RateLimit{1000000000, 1000000000, kMaxBurstPkts};
    return c;
}

// Shaping against dropping: see the top of perf/bench_decision.cpp.
enum ShapeAction : int64_t { kShapeDrop = 0, kShapeShape = 1 };
inline constexpr uint64_t kShapeNsPerPacket = 100;  // 10 Mpps offered to the core
inline constexpr uint64_t kShapeRun = 8;      // a key's packets in its turn (the first admitted)
inline constexpr uint64_t kShapeGroups = 16;  // turns a cycle, at least

inline uint64_t shape_group(uint64_t keys) {
    return std::min<uint64_t>(keys / kShapeGroups, 4096);
}

inline Config shape_config(uint64_t keys, ShapeAction action) {
    Config c;
    c.table_entries_per_core = keys;
    Rule r;
    r.name = "shaped";
    r.rate_count = 1;
    r.rate_period_ns = kShapeRun * shape_group(keys) * kShapeNsPerPacket;  // T: one turn
    r.burst_pkts = 1;
    r.action = action == kShapeShape ? RuleAction::shape : RuleAction::drop;
    r.queue.packets = action == kShapeShape ? kShapeRun : 0;
    c.rules.push_back(r);
    return c;
}

// An adaptive aggregate SYN rule against the same rule fixed: see the top of
// perf/bench_decision.cpp.
enum SynLoad : int64_t { kSynAdmit = 0, kSynOver = 1 };

inline Config adaptive_config(bool adaptive, SynLoad load) {
    Config c;
    c.table_entries_per_core = 1 << 20;
    Rule r;
    r.name = "syn-total";
    r.key_kind = KeyKind::dst;
    r.match.tcp_flags.must_set = 0x02;    // SYN
    r.match.tcp_flags.must_clear = 0x10;  // ACK
    r.match.dst_ports.push_back(PortRange{80, 80});
    r.rate_period_ns = 1000000000;
    if (load == kSynAdmit) {  // 10^9/s: one SYN per virtual nanosecond, all admitted
        r.rate_count = 1000000000;
        r.burst_pkts = kMaxBurstPkts;
    } else {
        r.rate_count = 10000;
        r.burst_pkts = 100;
    }
    if (adaptive) {
        r.adaptive.enabled = true;
        r.adaptive.min_count = r.rate_count / 10;
        r.adaptive.min_period_ns = 1000000000;
        r.adaptive.max_count = r.rate_count;
        r.adaptive.max_period_ns = 1000000000;
        r.adaptive.target_ns = 50000000;  // 50 ms
    }
    c.rules.push_back(r);
    return c;
}

}  // namespace floodgate::bench::mixes
