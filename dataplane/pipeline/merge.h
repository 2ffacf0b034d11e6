// Cross-core merge: every core's consumption since the last merge (keys and admitted packet
// counts, from Pipeline::publish) is charged to every other core's TATs (Pipeline::apply), so
// a key whose packets land on several cores is held to its limit across them, within a bound
// that grows with the merge interval (docs/design.md, "Several cores"). The records here are what
// the one-thread merge below and the live merge's rings (dataplane/live/merge_rings.h) carry.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "dataplane/api/rules.h"
#include "dataplane/core/limit_admit.h"

namespace floodgate {

class Pipeline;

// One key's packets admitted on one core since that core last published, for the cross-core
// merge: the other cores charge them to their own state for the key.
// It carries what the charge needs of the rule rather than the rule, so that it means the same
// after a ruleset swap: the kind of limit, its T (GCRA) or W (windows), and a window's N.
// packets 0 is a syn-auth verification instead: the key's TAT becomes at least
// now + interval_ns (the verified TTL) on the other cores.
struct Consumption {
    uint64_t hash;          // the key's LimitTable::hash: the same on every core (one seed)
    uint64_t published_ns;  // when the core published it (for the merge lag)
    uint64_t interval_ns;   // the rule's T (GCRA) or W (windows) when the packets were admitted
    uint32_t packets;
    uint32_t window_pkts : 30;  // windows: N (kMaxWindowPkts fits)
    uint32_t kind : 2;          // LimitKind

    static Consumption of(uint64_t hash, const LimitProfile &p) {
        const bool gcra = p.kind == LimitKind::gcra;
        return Consumption{hash,
                           0,
                           gcra ? p.gcra.interval_ns : p.window_ns,
                           0,
                           static_cast<uint32_t>(gcra ? 0 : p.window_pkts),
                           static_cast<uint32_t>(p.kind)};
    }
};
// The live merge (dataplane/live/merge_rings.cpp) moves records as 8-byte words.
static_assert(sizeof(Consumption) == 32 && sizeof(Consumption) % 8 == 0);
static_assert(kMaxWindowPkts < (1u << 30));

// Most keys one core tracks for publishing between two merges; past it, consumption of
// further keys is not shared (counted in merge_unshared_keys).
inline constexpr size_t kMaxUnpublishedKeys = 1 << 16;

// Merges the cores at now_ns, in one thread (replay). scratch is reused between calls.
void merge_cores(const std::vector<Pipeline *> &cores, uint64_t now_ns,
                 std::vector<Consumption> *scratch);

}  // namespace floodgate
