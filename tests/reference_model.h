// An independent, deliberately simple model of the pipeline's verdicts, for the scenario tests.
// It shares nothing with dataplane/ (no parser, no LPM, no table, no GCRA code): it works on
// what the traffic generator knows about each frame it built, and on the Config data types.
// Plain maps and linear scans; clarity over speed.
//
// The limiter table is modelled only by how many live keys it holds (a key is live while its
// TAT is after now; expired keys are the same as absent ones, and live ones are never evicted).
// A new key that finds that many live keys, over all rules, meets its rule's on_table_full.
//
// Each rule's algorithm is modelled as the seeds state it, with its own state per key: GCRA
// as a TAT; a token bucket as tokens (credit in ns) and the time of its last refill; a fixed
// window as its start and count; a sliding window as the seeds' WindowPair (start, current,
// previous). Window and token-bucket rules are modelled with an unlimited table only (no
// scenario fills the table with them).
#pragma once

#include <algorithm>
#include <array>
#include <compare>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "dataplane/api/rules.h"

namespace floodgate::test {

enum class FrameKind : uint8_t { ip, non_ip, malformed };

// What the generator knows about one frame it built.
struct ModelPacket {
    uint64_t ts_ns = 0;
    FrameKind kind = FrameKind::ip;
    const char *malformed_reason = "";  // the parser's name for it, when kind is malformed
    uint8_t family = 4;
    IpAddr src{};  // IPv4 in the first 4 bytes, the rest zero
    IpAddr dst{};
    uint8_t proto = 0;    // after the IPv6 extension chain
    bool has_l4 = false;  // false for non-first fragments and protocols without ports/type
    uint16_t src_port = 0;
    uint16_t dst_port = 0;
    uint8_t tcp_flags = 0;
};

// A limiter key: the family and the source masked to the rule's key length.
struct SourceKey {
    uint8_t family = 4;
    IpAddr addr{};
    auto operator<=>(const SourceKey &) const = default;
};

struct SourceKeyHash {
    size_t operator()(const SourceKey &k) const {
        uint64_t a, b;
        std::memcpy(&a, k.addr.data(), 8);
        std::memcpy(&b, k.addr.data() + 8, 8);
        uint64_t h = a * 0x9e3779b97f4a7c15ull ^ (b + k.family) * 0xc2b2ae3d27d4eb4full;
        return static_cast<size_t>(h ^ h >> 29);
    }
};

struct ModelRuleCounters {
    uint64_t matched = 0;
    uint64_t passed = 0;
    uint64_t refused = 0;    // packets this rule was the first enforce rule to refuse
    uint64_t overruled = 0;  // matched packets dropped because another rule was blamed
    uint64_t shadow_refused = 0;
    // Packets whose key was new and found the table full, by the rule's on_table_full.
    uint64_t table_full_shared = 0;
    uint64_t table_full_pass = 0;
    uint64_t table_full_drop = 0;
    // The refusals counted in `refused` and `shadow_refused`, per key (what top_refused shows).
    std::map<SourceKey, uint64_t> refused_by_key;
};

struct ModelCounters {
    uint64_t packets = 0;
    uint64_t passed = 0;
    uint64_t dropped = 0;
    uint64_t malformed = 0;
    uint64_t non_ip = 0;
    uint64_t allow_hits = 0;
    uint64_t block_hits = 0;
    uint64_t table_full_events = 0;                     // new keys that found no room
    std::map<std::string, uint64_t> malformed_reasons;  // only reasons seen
    std::vector<ModelRuleCounters> rules;               // in file order
};

struct ModelDecision {
    bool pass = true;
    int blamed_rule = -1;         // first refusing enforce rule, or -1
    unsigned matching_rules = 0;  // rules whose match held
    unsigned refusing_rules = 0;  // of those, enforce rules that would refuse
    unsigned table_full = 0;      // of those, rules whose new key found the table full
};

class ReferenceModel {
  public:
    static constexpr uint64_t kUnlimitedTable = ~0ull;

    // table_live_keys: how many live keys the limiter table holds, over all rules. The model
    // takes it as given, not from the `table:` section: how entries become slots is the
    // dataplane's business. A packet that needs a new slot under two rules at once while the
    // table is nearly full is outside the model (the dataplane's two claims may contend for
    // one slot), so scenarios that fill the table give each packet one matching rule.
    explicit ReferenceModel(Config cfg, uint64_t table_live_keys = kUnlimitedTable)
        : cfg_(std::move(cfg)),
          table_live_keys_(table_live_keys),
          tat_ns_(cfg_.rules.size()),
          other_(cfg_.rules.size()),
          overflow_tat_ns_(cfg_.rules.size(), 0) {
        counters_.rules.resize(cfg_.rules.size());
    }

    // Packets must come in file order (timestamps never decreasing, as replay reads them).
    ModelDecision decide(const ModelPacket &p) {
        ++counters_.packets;
        if (p.kind == FrameKind::malformed) {
            ++counters_.malformed;
            ++counters_.malformed_reasons[p.malformed_reason];
            return finish({.pass = false});
        }
        if (p.kind == FrameKind::non_ip) {
            ++counters_.non_ip;
            return finish({.pass = true});
        }

        // Longest prefix over allow and block together; a prefix is never in both lists.
        int best_len = -1;
        bool best_is_allow = false;
        for (const bool allow : {true, false})
            for (const Prefix &pfx : allow ? cfg_.allow : cfg_.block)
                if (contains(pfx, p.family, p.src) && pfx.len > best_len) {
                    best_len = pfx.len;
                    best_is_allow = allow;
                }
        if (best_len >= 0) {
            ++(best_is_allow ? counters_.allow_hits : counters_.block_hits);
            return finish({.pass = best_is_allow});
        }

        // Check every matching rule, then commit only if all enforce rules admit.
        struct Check {
            size_t rule;
            SourceKey key;
            uint64_t tat_ns;  // max(stored TAT, now); the rule's overflow TAT when table_full
            bool admit;
            bool table_full;     // the key was new and found no room, so nothing of its own is kept
            OtherState other{};  // the state to keep on admission, for the other algorithms
        };
        std::vector<Check> checks;
        ModelDecision d;
        SourceKey blamed_key;
        const bool every_slot_live = live_keys(p.ts_ns) >= table_live_keys_;
        for (size_t i = 0; i < cfg_.rules.size(); ++i) {
            const Rule &r = cfg_.rules[i];
            if (!matches(r.match, p)) continue;
            ModelRuleCounters &rc = counters_.rules[i];
            ++rc.matched;
            ++d.matching_rules;
            const SourceKey key = source_key(r, p);
            const auto it = tat_ns_[i].find(key);
            const uint64_t stored_ns = it == tat_ns_[i].end() ? 0 : it->second;
            Check c{i, key, std::max(stored_ns, p.ts_ns), false, false};
            if (stored_ns <= p.ts_ns && every_slot_live) {
                // A new key (or an expired one: the same thing) and every slot live.
                c.table_full = true;
                ++d.table_full;
                ++counters_.table_full_events;
                switch (r.on_table_full) {
                    case TableFullPolicy::pass:
                        ++rc.table_full_pass;
                        c.admit = true;
                        break;
                    case TableFullPolicy::drop:
                        ++rc.table_full_drop;
                        c.admit = false;
                        break;
                    case TableFullPolicy::shared:
                        // One TAT per rule for every key without room, at the rule's own limit.
                        ++rc.table_full_shared;
                        c.tat_ns = std::max(overflow_tat_ns_[i], p.ts_ns);
                        c.admit = gcra_admits(r, c.tat_ns, p.ts_ns);
                        break;
                }
            } else if (r.algorithm == RuleAlgorithm::gcra) {
                c.admit = gcra_admits(r, c.tat_ns, p.ts_ns);
            } else {
                c.admit = other_admits(i, key, p.ts_ns, &c.other);
            }
            checks.push_back(c);
            if (!c.admit && r.mode == RuleMode::enforce) {
                ++d.refusing_rules;
                if (d.blamed_rule < 0) {
                    d.blamed_rule = static_cast<int>(i);
                    blamed_key = key;
                }
            }
        }
        d.pass = d.blamed_rule < 0;
        for (const Check &c : checks) {
            const Rule &r = cfg_.rules[c.rule];
            ModelRuleCounters &rc = counters_.rules[c.rule];
            if (!c.admit && r.mode == RuleMode::shadow) {
                ++rc.shadow_refused;
                ++rc.refused_by_key[c.key];
            }
            if (!d.pass && c.rule != static_cast<size_t>(d.blamed_rule)) ++rc.overruled;
            if (d.pass) {
                ++rc.passed;
                if (!c.admit) continue;
                // A key without room keeps nothing; with `shared`, its rule's overflow TAT moves.
                if (r.algorithm != RuleAlgorithm::gcra)
                    other_[c.rule][c.key] = c.other;
                else if (!c.table_full)
                    tat_ns_[c.rule][c.key] = c.tat_ns + r.interval_ns();
                else if (r.on_table_full == TableFullPolicy::shared)
                    overflow_tat_ns_[c.rule] = c.tat_ns + r.interval_ns();
            }
        }
        if (!d.pass) {
            ModelRuleCounters &rc = counters_.rules[static_cast<size_t>(d.blamed_rule)];
            ++rc.refused;
            ++rc.refused_by_key[blamed_key];
        }
        return finish(d);
    }

    const ModelCounters &counters() const { return counters_; }
    const Config &config() const { return cfg_; }

    static SourceKey source_key(const Rule &r, const ModelPacket &p) {
        SourceKey k{p.family, p.src};
        keep_first_bits(&k.addr, p.family == 4 ? r.key_ipv4_len : r.key_ipv6_len);
        return k;
    }

  private:
    // A key's state under a token-bucket or window rule.
    struct OtherState {
        // token-bucket: tokens as credit in ns (one token is T ns), and when it was refilled.
        uint64_t credit_ns = 0;
        uint64_t last_ns = 0;
        // windows: the window's start (a multiple of W), its count and the previous window's.
        uint64_t start_ns = 0;
        uint64_t current = 0;
        uint64_t previous = 0;
        bool seen = false;
    };

    // Whether the key's packet at now is admitted under rule i, and the key's state if it is.
    bool other_admits(size_t i, const SourceKey &key, uint64_t now_ns, OtherState *next) const {
        const Rule &r = cfg_.rules[i];
        const auto it = other_[i].find(key);
        OtherState s = it == other_[i].end() ? OtherState{} : it->second;
        const uint64_t w_ns = r.rate_period_ns;
        const uint64_t n = r.rate_count;
        switch (r.algorithm) {
            case RuleAlgorithm::token_bucket: {
                // A new key finds a full bucket of `burst` tokens; refill one token per T,
                // continuously, never past the capacity; a packet takes one whole token.
                const uint64_t t_ns = r.interval_ns();
                const uint64_t capacity_ns = t_ns * r.burst_pkts;
                s.credit_ns = !s.seen ? capacity_ns
                                      : std::min(capacity_ns, s.credit_ns + (now_ns - s.last_ns));
                s.last_ns = now_ns;
                s.seen = true;
                if (s.credit_ns < t_ns) return false;
                s.credit_ns -= t_ns;
                *next = s;
                return true;
            }
            case RuleAlgorithm::fixed_window: {
                // One count per clock-aligned window; refuse once it reaches N.
                const uint64_t start = now_ns - now_ns % w_ns;
                if (!s.seen || s.start_ns != start) s = {.start_ns = start, .seen = true};
                if (s.current >= n) return false;
                ++s.current;
                *next = s;
                return true;
            }
            case RuleAlgorithm::sliding_window: {
                // The seeds' SlidingWindowCounter.tryAcquire, with the estimate compared
                // exactly: previous * (W - (now - start)) / W + current + 1 <= N.
                const uint64_t start = now_ns - now_ns % w_ns;
                if (!s.seen) {
                    s = {.start_ns = start, .seen = true};
                } else if (s.start_ns != start) {
                    const bool just_before = s.start_ns + w_ns == start;
                    s.previous = just_before ? s.current : 0;
                    s.current = 0;
                    s.start_ns = start;
                }
                using u128 = unsigned __int128;
                const uint64_t overlap_ns = w_ns - (now_ns - start);
                if (u128(s.previous) * overlap_ns + u128(s.current + 1) * w_ns > u128(n) * w_ns)
                    return false;
                ++s.current;
                *next = s;
                return true;
            }
            case RuleAlgorithm::gcra:
            default:
                return false;  // not used: GCRA has its own path
        }
    }

    ModelDecision finish(ModelDecision d) {
        ++(d.pass ? counters_.passed : counters_.dropped);
        return d;
    }

    // GCRA with T = the rule's interval and tau = T * burst, for a TAT already max(TAT, now).
    static bool gcra_admits(const Rule &r, uint64_t tat_ns, uint64_t now_ns) {
        const uint64_t t_ns = r.interval_ns();
        return tat_ns + t_ns - now_ns <= t_ns * r.burst_pkts;
    }

    // Keys of every rule whose TAT is after now, counted only when the table has a limit.
    uint64_t live_keys(uint64_t now_ns) const {
        if (table_live_keys_ == kUnlimitedTable) return 0;
        uint64_t n = 0;
        for (const auto &rule_tats : tat_ns_)
            for (const auto &[key, tat_ns] : rule_tats) n += tat_ns > now_ns;
        return n;
    }

    static void keep_first_bits(IpAddr *a, unsigned bits) {
        for (unsigned i = 0; i < 16; ++i) {
            if (bits >= 8 * (i + 1)) continue;
            const unsigned keep = bits > 8 * i ? bits - 8 * i : 0;  // 0..7 bits of this byte
            (*a)[i] &= static_cast<uint8_t>(0xff00u >> keep);
        }
    }

    static bool contains(const Prefix &pfx, uint8_t family, const IpAddr &addr) {
        if (pfx.family != family) return false;
        IpAddr a = addr;
        keep_first_bits(&a, pfx.len);
        return a == pfx.addr;
    }

    static bool any_contains(const std::vector<Prefix> &list, uint8_t family, const IpAddr &addr) {
        return std::any_of(list.begin(), list.end(),
                           [&](const Prefix &pfx) { return contains(pfx, family, addr); });
    }

    static bool in_ranges(const std::vector<PortRange> &ranges, uint16_t port) {
        return std::any_of(ranges.begin(), ranges.end(),
                           [&](const PortRange &r) { return r.lo <= port && port <= r.hi; });
    }

    static bool matches(const RuleMatch &m, const ModelPacket &p) {
        if (m.proto && *m.proto != p.proto) return false;
        // Ports exist only on TCP/UDP packets with an L4 header; a rule with ports never
        // matches anything else.
        const bool has_ports = p.has_l4 && (p.proto == 6 || p.proto == 17);
        if (!m.dst_ports.empty() && !(has_ports && in_ranges(m.dst_ports, p.dst_port)))
            return false;
        if (!m.src_ports.empty() && !(has_ports && in_ranges(m.src_ports, p.src_port)))
            return false;
        if (!m.src.empty() && !any_contains(m.src, p.family, p.src)) return false;
        if (!m.dst.empty() && !any_contains(m.dst, p.family, p.dst)) return false;
        if (m.tcp_flags.must_set != 0 || m.tcp_flags.must_clear != 0) {
            if (!(p.has_l4 && p.proto == 6)) return false;
            if ((p.tcp_flags & m.tcp_flags.must_set) != m.tcp_flags.must_set) return false;
            if ((p.tcp_flags & m.tcp_flags.must_clear) != 0) return false;
        }
        return true;
    }

    Config cfg_;
    uint64_t table_live_keys_;
    ModelCounters counters_;
    // Per rule: TAT in ns per key. Entries are never removed; an expired one (TAT <= now)
    // behaves exactly like an absent one, so keeping it changes no verdict.
    std::vector<std::unordered_map<SourceKey, uint64_t, SourceKeyHash>> tat_ns_;
    // Per rule: the state of each key under a token-bucket or window rule.
    std::vector<std::unordered_map<SourceKey, OtherState, SourceKeyHash>> other_;
    // Per rule: the one TAT shared by keys that found the table full (on_table_full: shared).
    std::vector<uint64_t> overflow_tat_ns_;
};

}  // namespace floodgate::test
