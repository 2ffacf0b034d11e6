// An independent, deliberately simple model of the pipeline's verdicts, for the scenario tests.
// It shares nothing with dataplane/ (no parser, no LPM, no table, no GCRA code): it works on
// what the traffic generator knows about each frame it built, and on the Config data types.
// Plain maps and linear scans; clarity over speed.
//
// The limiter table is modelled only by how many live keys it holds (a key is live while its
// TAT is after now; expired keys are the same as absent ones, and live ones are never evicted).
// A new key that finds that many live keys, over all rules, meets its rule's on_table_full.
//
// Aggregate limits (key dst or none) are modelled from the wording, not the code: one
// TAT per destination prefix (or per rule), every trust class testing it with its own
// tolerance, tau_c = tau - floor(tau * above_c / 100), above_c being the reserve of the classes
// above c. The class is looked up only when the new class's tolerance refuses: established
// (a reply went out toward the source's prefix, see observe_inside()), known (a packet of it
// passed an aggregate rule within the ttl, or another, non-aggregate rule of the packet found
// the source's key live and admitted it), else new.
// syn-auth is not modelled, so neither is the verified class: scenarios keep syn-auth out.
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
    std::vector<uint8_t> payload;  // the L4 payload (after the TCP/UDP/ICMP header), whole
};

// An address prefix as a report names it (top_refused): the family and the address masked to
// the rule's key length (the source's, or a dst key's destination).
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

// What one rule keeps a TAT per: the source prefix (src), the destination prefix (dst), both
// (src+dst) or nothing (none: family 0, one bucket for IPv4 and IPv6).
struct ModelRuleKey {
    uint8_t family = 4;
    IpAddr src{};
    IpAddr dst{};
    auto operator<=>(const ModelRuleKey &) const = default;
};

struct ModelRuleKeyHash {
    size_t operator()(const ModelRuleKey &k) const {
        const SourceKeyHash h;
        return h(SourceKey{k.family, k.src}) * 31 + h(SourceKey{k.family, k.dst});
    }
};

// Trust classes of an aggregate rule, most trusted first (verified is never modelled).
enum class ModelClass : uint8_t { established, verified, known, fresh };

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
    // Aggregate rules: refusals this rule was blamed for, by the class of their source; and
    // passed packets that only their class's reserve admitted.
    uint64_t refused_established = 0;
    uint64_t refused_verified = 0;
    uint64_t refused_known = 0;
    uint64_t refused_new = 0;
    uint64_t reserve_established = 0;
    uint64_t reserve_verified = 0;
    uint64_t reserve_known = 0;
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
    uint64_t table_full_events = 0;  // new keys that found no room
    // Frames from the inside (set_inside): not decided, not counted above. Replies among them,
    // when the config has an aggregate rule, mark their destination established.
    uint64_t inside_frames = 0;
    uint64_t established_marked = 0;  // replies that marked (or found marked) their destination
    uint64_t established_full = 0;    // ... that found no room for the mark
    uint64_t marks_over_budget = 0;   // marks not written: the budget was spent
    std::map<std::string, uint64_t> malformed_reasons;  // only reasons seen
    std::vector<ModelRuleCounters> rules;               // in file order
};

struct ModelDecision {
    bool pass = true;
    int blamed_rule = -1;         // first refusing enforce rule, or -1
    unsigned matching_rules = 0;  // rules whose match held
    unsigned refusing_rules = 0;  // of those, enforce rules that would refuse
    unsigned table_full = 0;      // of those, rules whose new key found the table full
    bool inside = false;          // a frame from the inside: passed, not decided
    // The blamed rule's class of the source, when that rule is an aggregate one.
    ModelClass blamed_class = ModelClass::fresh;
    unsigned by_reserve = 0;  // aggregate rules that admitted it from a class's reserve
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

    // The protected side (replay --inside): IP frames whose source is in one of these went
    // inside to outside.
    void set_inside(std::vector<Prefix> inside) { inside_ = std::move(inside); }

    // Packets must come in file order (timestamps never decreasing, as replay reads them).
    ModelDecision decide(const ModelPacket &p) {
        if (p.kind == FrameKind::ip && any_contains(inside_, p.family, p.src)) {
            observe_inside(p);
            return {.pass = true, .inside = true};
        }
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
            ModelRuleKey key;
            uint64_t tat_ns;  // max(stored TAT, now); the rule's overflow TAT when table_full
            bool admit;
            bool table_full;    // the key was new and found no room, so nothing of its own is kept
            bool live = false;  // the key's stored TAT was after now
            ModelClass cls = ModelClass::fresh;  // aggregate rules refused at the new tolerance
            bool by_reserve = false;             // ... and admitted by their class's
            OtherState other{};  // the state to keep on admission, for the other algorithms
        };
        std::vector<Check> checks;
        ModelDecision d;
        const bool every_slot_live = live_keys(p.ts_ns) >= table_live_keys_;
        // Per-source (and per-pair) rules first: an aggregate rule's class "known" depends on
        // what they found. Checks are kept in file order for blame.
        std::vector<size_t> order;
        for (const bool aggregate : {false, true})
            for (size_t i = 0; i < cfg_.rules.size(); ++i)
                if (is_aggregate_key(cfg_.rules[i].key_kind) == aggregate &&
                    matches(cfg_.rules[i].match, p))
                    order.push_back(i);
        for (const size_t i : order) {
            const Rule &r = cfg_.rules[i];
            ModelRuleCounters &rc = counters_.rules[i];
            ++rc.matched;
            ++d.matching_rules;
            const ModelRuleKey key = rule_key(r, p);
            const auto it = tat_ns_[i].find(key);
            const uint64_t stored_ns = it == tat_ns_[i].end() ? 0 : it->second;
            Check c{i, key, std::max(stored_ns, p.ts_ns), false, false};
            c.live = stored_ns > p.ts_ns;
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
                        c.admit =
                            gcra_admits(r, tolerance_ns(r, ModelClass::fresh), c.tat_ns, p.ts_ns);
                        break;
                }
            } else if (r.algorithm == RuleAlgorithm::gcra) {
                c.admit = gcra_admits(r, tolerance_ns(r, ModelClass::fresh), c.tat_ns, p.ts_ns);
            } else {
                c.admit = other_admits(i, key, p.ts_ns, &c.other);
            }
            // Classes are modelled for GCRA aggregate rules (no scenario has a window one).
            if (!c.admit && is_aggregate_key(r.key_kind)) {
                // Refused at the new sources' tolerance: the source's class decides.
                c.cls = trust_class(p, [&] {
                    for (const Check &o : checks)
                        if (!is_aggregate_key(cfg_.rules[o.rule].key_kind) && !o.table_full &&
                            o.live && o.admit)
                            return true;
                    return false;
                }());
                if (c.cls != ModelClass::fresh && !c.table_full &&
                    r.algorithm == RuleAlgorithm::gcra) {
                    c.admit = gcra_admits(r, tolerance_ns(r, c.cls), c.tat_ns, p.ts_ns);
                    c.by_reserve = c.admit;
                }
            }
            checks.push_back(c);
        }
        std::sort(checks.begin(), checks.end(),
                  [](const Check &x, const Check &y) { return x.rule < y.rule; });
        SourceKey blamed_key;
        for (const Check &c : checks) {
            const Rule &r = cfg_.rules[c.rule];
            if (!c.admit && r.mode == RuleMode::enforce) {
                ++d.refusing_rules;
                if (d.blamed_rule < 0) {
                    d.blamed_rule = static_cast<int>(c.rule);
                    blamed_key = report_key(r, p);
                    d.blamed_class = c.cls;
                }
            }
        }
        d.pass = d.blamed_rule < 0;
        for (const Check &c : checks) {
            const Rule &r = cfg_.rules[c.rule];
            ModelRuleCounters &rc = counters_.rules[c.rule];
            if (!c.admit && r.mode == RuleMode::shadow) {
                ++rc.shadow_refused;
                ++rc.refused_by_key[report_key(r, p)];
            }
            if (!d.pass && c.rule != static_cast<size_t>(d.blamed_rule)) ++rc.overruled;
            if (d.pass) {
                ++rc.passed;
                if (c.by_reserve) {
                    ++d.by_reserve;
                    ++(c.cls == ModelClass::established ? rc.reserve_established
                       : c.cls == ModelClass::verified  ? rc.reserve_verified
                                                        : rc.reserve_known);
                }
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
        // Admitted by an aggregate rule's own limit (not a table-full pass, not a shadow rule's
        // would-be refusal), and by every other: the source is known from now on.
        bool aggregate = false;
        for (const Check &c : checks)
            aggregate |= is_aggregate_key(cfg_.rules[c.rule].key_kind) && c.admit && !c.table_full;
        if (d.pass && aggregate)
            remember(&known_until_ns_, established_key(p.family, p.src), p.ts_ns);
        if (!d.pass) {
            ModelRuleCounters &rc = counters_.rules[static_cast<size_t>(d.blamed_rule)];
            ++rc.refused;
            ++rc.refused_by_key[blamed_key];
            if (is_aggregate_key(cfg_.rules[static_cast<size_t>(d.blamed_rule)].key_kind))
                ++(d.blamed_class == ModelClass::established ? rc.refused_established
                   : d.blamed_class == ModelClass::verified  ? rc.refused_verified
                   : d.blamed_class == ModelClass::known     ? rc.refused_known
                                                             : rc.refused_new);
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

    static SourceKey destination_key(const Rule &r, const ModelPacket &p) {
        SourceKey k{p.family, p.dst};
        keep_first_bits(&k.addr, p.family == 4 ? r.dst_key_ipv4_len : r.dst_key_ipv6_len);
        return k;
    }

    static bool is_aggregate_key(KeyKind k) { return k == KeyKind::dst || k == KeyKind::none; }

    static ModelRuleKey rule_key(const Rule &r, const ModelPacket &p) {
        switch (r.key_kind) {
            case KeyKind::src:
                return {p.family, source_key(r, p).addr, {}};
            case KeyKind::dst:
                return {p.family, {}, destination_key(r, p).addr};
            case KeyKind::src_dst:
                return {p.family, source_key(r, p).addr, destination_key(r, p).addr};
            case KeyKind::none:
            default:
                return {0, {}, {}};
        }
    }

    // The prefix a refusal is reported by (top_refused): the source for src and src+dst keys
    // (a source's pairs add up), the destination for dst keys, the family's /0 for none.
    static SourceKey report_key(const Rule &r, const ModelPacket &p) {
        switch (r.key_kind) {
            case KeyKind::dst:
                return destination_key(r, p);
            case KeyKind::none:
                return {p.family, {}};
            case KeyKind::src:
            case KeyKind::src_dst:
            default:
                return source_key(r, p);
        }
    }

    // The prefix length top_refused reports for a rule and family.
    static unsigned report_len(const Rule &r, uint8_t family) {
        switch (r.key_kind) {
            case KeyKind::dst:
                return family == 4 ? r.dst_key_ipv4_len : r.dst_key_ipv6_len;
            case KeyKind::none:
                return 0;
            default:
                return family == 4 ? r.key_ipv4_len : r.key_ipv6_len;
        }
    }

    // An aggregate rule's tolerance for class c: tau = T * burst less the reserve of the
    // classes above c, rounded so that the reserve is whole nanoseconds (floor). Per-source
    // rules have one class: tau.
    static uint64_t tolerance_ns(const Rule &r, ModelClass c) {
        const unsigned __int128 tau =
            static_cast<unsigned __int128>(r.interval_ns()) * r.burst_pkts;
        if (!is_aggregate_key(r.key_kind)) return static_cast<uint64_t>(tau);
        const unsigned e = r.reserve.established, v = r.reserve.verified, k = r.reserve.known;
        const unsigned above = c == ModelClass::established ? 0
                               : c == ModelClass::verified  ? e
                               : c == ModelClass::known     ? e + v
                                                            : e + v + k;
        return static_cast<uint64_t>(tau - tau * above / 100);
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
    bool other_admits(size_t i, const ModelRuleKey &key, uint64_t now_ns, OtherState *next) const {
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

    // GCRA with T = the rule's interval and tolerance tau, for a TAT already max(TAT, now).
    static bool gcra_admits(const Rule &r, uint64_t tau_ns, uint64_t tat_ns, uint64_t now_ns) {
        return tat_ns + r.interval_ns() - now_ns <= tau_ns;
    }

    bool has_aggregate() const {
        return std::any_of(cfg_.rules.begin(), cfg_.rules.end(),
                           [](const Rule &r) { return is_aggregate_key(r.key_kind); });
    }

    // What the protected side answering a source looks like: TCP with ACK, without SYN or RST.
    static bool is_reply(const ModelPacket &p) {
        if (!p.has_l4) return false;
        // ACK without SYN or RST; no UDP: a SYN-ACK or a DNS response goes to spoofed sources too.
        return p.proto == 6 && (p.tcp_flags & 0x16) == 0x10;
    }

    SourceKey established_key(uint8_t family, const IpAddr &addr) const {
        SourceKey k{family, addr};
        keep_first_bits(&k.addr,
                        family == 4 ? cfg_.established.ipv4_len : cfg_.established.ipv6_len);
        return k;
    }

    // A frame from the inside: a reply marks its destination's prefix established until now +
    // ttl, unless the mark it has still holds more than half the ttl.
    void observe_inside(const ModelPacket &p) {
        ++counters_.inside_frames;
        if (!has_aggregate() || !is_reply(p)) return;
        if (remember(&established_until_ns_, established_key(p.family, p.dst), p.ts_ns))
            ++counters_.established_marked;
    }

    // Marks k until now + ttl, unless its mark still holds more than half the ttl; false when
    // the mark is new and the table has no room for it (counted in established_full).
    bool remember(std::map<SourceKey, uint64_t> *marks, const SourceKey &k, uint64_t now_ns) {
        uint64_t &until_ns = (*marks)[k];
        const uint64_t ttl_ns = cfg_.established.ttl_ns;
        if (until_ns > now_ns + ttl_ns / 2) return true;
        // The mark budget: a quarter of the table over a TTL (one core), bursts of 1024.
        const uint64_t t_ns =
            std::max<uint64_t>(1, static_cast<uint64_t>(static_cast<unsigned __int128>(ttl_ns) * 4 /
                                                        cfg_.table_entries_per_core));
        const uint64_t next_ns = std::max(mark_budget_tat_ns_, now_ns) + t_ns;
        if (next_ns - now_ns > t_ns * 1024) {
            ++counters_.marks_over_budget;
            return false;
        }
        mark_budget_tat_ns_ = next_ns;
        if (until_ns <= now_ns && live_keys(now_ns) >= table_live_keys_) {
            ++counters_.established_full;
            return false;
        }
        until_ns = std::max(until_ns, now_ns + ttl_ns);
        return true;
    }

    ModelClass trust_class(const ModelPacket &p, bool known) const {
        const auto it = established_until_ns_.find(established_key(p.family, p.src));
        if (it != established_until_ns_.end() && it->second > p.ts_ns)
            return ModelClass::established;
        const auto seen = known_until_ns_.find(established_key(p.family, p.src));
        if (seen != known_until_ns_.end() && seen->second > p.ts_ns) return ModelClass::known;
        return known ? ModelClass::known : ModelClass::fresh;
    }

    // Keys of every rule whose TAT is after now, counted only when the table has a limit.
    uint64_t live_keys(uint64_t now_ns) const {
        if (table_live_keys_ == kUnlimitedTable) return 0;
        uint64_t n = 0;
        for (const auto &rule_tats : tat_ns_)
            for (const auto &[key, tat_ns] : rule_tats) n += tat_ns > now_ns;
        for (const auto &[key, until_ns] : established_until_ns_) n += until_ns > now_ns;
        for (const auto &[key, until_ns] : known_until_ns_) n += until_ns > now_ns;
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
        if (m.payload.present() && !payload_matches(m.payload, p)) return false;
        return true;
    }

    // The window's bytes searched for each pattern, byte by byte (std::search), case folded
    // for caseless ones. Literals and dns_suffix only: the model has no regex engine.
    static bool payload_matches(const PayloadMatch &m, const ModelPacket &p) {
        if (!p.has_l4 || p.payload.size() <= m.offset) return false;
        const size_t len = m.depth != 0 ? std::min<size_t>(m.depth, p.payload.size() - m.offset)
                                        : p.payload.size() - m.offset;
        const auto begin = p.payload.begin() + static_cast<std::ptrdiff_t>(m.offset);
        const auto end = begin + static_cast<std::ptrdiff_t>(len);
        const auto fold = [](uint8_t c) {
            return c >= 'A' && c <= 'Z' ? static_cast<uint8_t>(c - 'A' + 'a') : c;
        };
        for (const PayloadPattern &pat : m.patterns) {
            std::string needle = pat.text;
            bool caseless = pat.caseless;
            if (pat.kind == PayloadPattern::Kind::dns_suffix) {
                needle.clear();
                size_t at = 0;
                while (at <= pat.text.size()) {  // "a.b" -> \x01a\x01b\x00
                    const size_t dot = std::min(pat.text.find('.', at), pat.text.size());
                    needle.push_back(static_cast<char>(dot - at));
                    needle += pat.text.substr(at, dot - at);
                    at = dot + 1;
                }
                needle.push_back('\0');
                caseless = true;
            }
            if (pat.kind == PayloadPattern::Kind::regex) continue;  // scenarios use none
            const auto same = [&](uint8_t a, char b) {
                return caseless ? fold(a) == fold(static_cast<uint8_t>(b))
                                : a == static_cast<uint8_t>(b);
            };
            if (std::search(begin, end, needle.begin(), needle.end(), same) != end) return true;
        }
        return false;
    }

    Config cfg_;
    uint64_t table_live_keys_;
    ModelCounters counters_;
    // Per rule: TAT in ns per key. Entries are never removed; an expired one (TAT <= now)
    // behaves exactly like an absent one, so keeping it changes no verdict.
    std::vector<std::unordered_map<ModelRuleKey, uint64_t, ModelRuleKeyHash>> tat_ns_;
    // Per rule: the state of each key under a token-bucket or window rule.
    std::vector<std::unordered_map<ModelRuleKey, OtherState, ModelRuleKeyHash>> other_;
    // Per rule: the one TAT shared by keys that found the table full (on_table_full: shared).
    std::vector<uint64_t> overflow_tat_ns_;
    std::vector<Prefix> inside_;
    // Established prefixes: until when (ns). Never removed; an expired one is an absent one.
    // Source marks (established: a reply went out to it; known: an aggregate rule passed it),
    // each until when.
    std::map<SourceKey, uint64_t> established_until_ns_;
    std::map<SourceKey, uint64_t> known_until_ns_;
    uint64_t mark_budget_tat_ns_ = 0;
};

}  // namespace floodgate::test
