// What another box of the cluster may make this one do (docs/cluster.md, "Several boxes"). A box
// that holds valid keys may still be compromised: whatever it signs is clamped to what an honest
// box could have caused, never taken whole.
//   a charge: per (rule, key) and sync, at most kRemoteChargeMargin times what one box could
//             have admitted in a sync interval (rate x interval + burst) from each other box,
//             and the sum of them at most that for each other box live;
//   an escalation: its TTL at most the longest of this box's own escalation TTLs (none that
//             "never expires": 0 is the cap too), and kRemoteEscalationsPerBox per other box
//             and sync, and none shorter than the rules' own source keys.
// (The other boxes' allows are bounded by floodctl's daemon, control/cluster/remote_allows.h.)
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>

#include "dataplane/api/rules.h"

namespace floodgate {

// Room for the sync's jitter: a round that comes late carries more than one interval.
inline constexpr uint64_t kRemoteChargeMargin = 2;

// The most packets one box could have admitted for one key of rule r in interval_ns: its
// highest rate (an adaptive rule's max) times the interval, rounded up, plus its burst (a
// window rule: N for each window the interval touches, one more than it spans).
uint64_t one_box_admits(const Rule &r, uint64_t interval_ns);

// The most packets a sync may charge to one key of rule r from the other boxes of a cluster of
// `boxes` live boxes (this one among them): kRemoteChargeMargin x one_box_admits for each
// other box (one at least).
uint64_t remote_charge_bound(const Rule &r, uint64_t interval_ns, uint32_t boxes);

// What a sync charges to one key of rule r from the other boxes' rows (one a box, as the daemon
// tells them): each row at most remote_charge_bound of one other box, their sum at most
// remote_charge_bound of `boxes`. A box that signs its rows under many box ids is still held to
// the second: every id it makes up counts as a live box, and the bound grows with the live boxes.
uint64_t remote_charge(const Rule &r, uint64_t interval_ns, uint32_t boxes,
                       std::span<const uint64_t> rows);

// The most escalations a sync may add from each other box: far more than a box's rules
// escalate in an interval of an attack, far fewer than would fill the XDP tier.
inline constexpr uint64_t kRemoteEscalationsPerBox = 64;
inline uint64_t remote_escalations_bound(uint32_t boxes) {
    return kRemoteEscalationsPerBox * (std::max<uint32_t>(boxes, 2) - 1);
}

// The longest TTL another box's escalation may have here: the longest escalation TTL of
// config's escalating rules (EscalateOptions' default when none escalates).
uint64_t remote_escalation_ttl_cap_ns(const Config &config);

// Whether another box's escalation of p is no shorter than the shortest source key of
// config's escalating rules (what a box escalates): never a whole family (refused: short).
bool remote_escalation_long_enough(const Config &config, const Prefix &p);

// ttl_ns as taken from another box: 0 (never expires) and past the cap are the cap.
inline uint64_t clamp_remote_ttl(uint64_t ttl_ns, uint64_t cap_ns) {
    return ttl_ns == 0 || ttl_ns > cap_ns ? cap_ns : ttl_ns;
}

}  // namespace floodgate
