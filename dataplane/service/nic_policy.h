// The NIC tier's policy: which sources hold an rte_flow drop rule on the outside port, within
// what a NIC can bear. Frequent rule changes can take a NIC down (a PAM 2021 study measured up
// to 70 Gbps lost), so only what the tiers above already decided to drop, and bounded:
//   - at most max_rules rules at once and inserts_per_second new ones a second;
//   - the operator's blocks before escalations: a block evicts the escalation nearest to its
//     end when the rules are all taken;
//   - each rule held while its source is wanted (an escalation's TTL, a block's), at most ttl
//     from its insertion; a source that reached ttl, or that the port refused, is not tried
//     again until it is wanted anew (another escalation, a block with another end);
//   - nothing that overlaps a live allow (the NIC would drop the allowed part) and no prefix
//     longer than a NIC is asked for (nic_drop_rule.h);
//   - validated before it is created; a refusal counted by reason, the source left to the
//     tiers below.
// Pure logic over a port given to each call (the live one: nic_flow_port.h; the tests': a
// fake), no clock of its own. One thread (the feed's).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "dataplane/api/prefix.h"
#include "dataplane/api/rules.h"
#include "dataplane/live/nic_drop_rule.h"

namespace floodgate {

// Who wants a source dropped, most important first.
enum class NicOrigin : uint8_t { block, escalated };
const char *nic_origin_name(NicOrigin origin);

struct NicWanted {
    Prefix source;
    NicOrigin origin = NicOrigin::escalated;
    uint64_t expires_ns = 0;  // 0: until it is no longer wanted
    std::string rule;         // the escalating rule; "" for a block
};

// What the policy asks of a port.
class NicPort {
  public:
    virtual ~NicPort() = default;
    virtual NicAnswer validate(const Prefix &source) = 0;
    virtual NicAnswer create(const Prefix &source, uint64_t *handle) = 0;
    virtual bool destroy(uint64_t handle) = 0;
    // The rule's COUNT since it was created.
    virtual bool query(uint64_t handle, uint64_t *hits, uint64_t *bytes) = 0;
};

// Why a rule left the port, one list for the stats' keys and the metrics' labels.
#define FG_NIC_WITHDRAWALS(X)                                             \
    X(expired)  /* its source's own time ended */                         \
    X(ttl)      /* held for the tier's ttl */                             \
    X(unwanted) /* no longer wanted: a block removed, an allow over it */ \
    X(evicted)  /* made room for an operator's block */                   \
    X(stopped)  /* the run stopped cleanly */
enum class NicWithdrawal : uint8_t {
#define FG_NIC_WITHDRAWAL_ENUM(name) name,
    FG_NIC_WITHDRAWALS(FG_NIC_WITHDRAWAL_ENUM)
#undef FG_NIC_WITHDRAWAL_ENUM
};
inline constexpr unsigned kNicWithdrawalCount = 5;
const char *nic_withdrawal_name(NicWithdrawal w);

// Why a wanted source was not asked of the port at all.
#define FG_NIC_SKIPS(X)                                 \
    X(prefix) /* longer than the tier asks a NIC for */ \
    X(allow)  /* overlaps a live allow */
enum class NicSkip : uint8_t {
#define FG_NIC_SKIP_ENUM(name) name,
    FG_NIC_SKIPS(FG_NIC_SKIP_ENUM)
#undef FG_NIC_SKIP_ENUM
};
inline constexpr unsigned kNicSkipCount = 2;
const char *nic_skip_name(NicSkip s);

class NicPolicy {
  public:
    explicit NicPolicy(const NicTierOptions &options) : options_(options) {}

    // Once a second: withdraws what ended, inserts what is wanted within the bounds, and reads
    // every held rule's counters. `wanted` may name a source more than once (a block and an
    // escalation): the most important, then the latest end, counts.
    void tick(uint64_t now_ns, const std::vector<NicWanted> &wanted,
              const std::vector<Prefix> &allows, NicPort &port);
    // A clean stop: every rule withdrawn (counted as stopped). Returns how many.
    size_t withdraw_all(NicPort &port);

    struct Held {
        NicWanted wanted;
        uint64_t handle = 0;
        uint64_t inserted_ns = 0;
        uint64_t hits = 0, bytes = 0;  // the rule's COUNT, as of the last tick
    };
    const std::vector<Held> &held() const { return held_; }

    struct Counts {
        uint64_t inserted = 0;
        uint64_t refused[kNicRefusalCount] = {};
        uint64_t withdrawn[kNicWithdrawalCount] = {};
        uint64_t skipped[kNicSkipCount] = {};
        uint64_t destroy_failed = 0;
        uint64_t query_failed = 0;
        // Wanted, not held, not settled: left for the cap or the rate (at the last tick).
        uint64_t waiting = 0;
        // COUNT of the rules withdrawn, so that held + these are all the port dropped.
        uint64_t hits_withdrawn = 0, bytes_withdrawn = 0;
    };
    const Counts &counts() const { return counts_; }
    const NicTierOptions &options() const { return options_; }

  private:
    using Key = std::tuple<Prefix, NicOrigin, uint64_t>;  // a wanted entry: what settles it
    static Key key(const NicWanted &w) { return {w.source, w.origin, w.expires_ns}; }
    uint64_t ends_ns(const Held &h) const;
    bool withdraw(size_t i, NicWithdrawal why, NicPort &port);
    void insert(const std::vector<NicWanted> &candidates, uint64_t now_ns, NicPort &port);

    NicTierOptions options_;
    std::vector<Held> held_;
    // Entries the tier is done with until wanted anew (held for ttl, refused, skipped); pruned
    // to what is still wanted at each tick.
    std::set<Key> settled_;
    Counts counts_;
};

}  // namespace floodgate
