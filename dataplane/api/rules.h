// The rules model: what an operator's rules file says, validated, as plain data. Both processes
// hold it (floodctl to diff and show, the dataplane to compile into its RuleSet); the rules
// loader (rules/) is the only way to make one from text, and refuses anything outside the
// limits below, so every later computation stays in range.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dataplane/api/prefix.h"

namespace floodgate {

struct PortRange {
    uint16_t lo = 0;
    uint16_t hi = 0;  // inclusive
};

// TCP flag condition: every bit of must_set is set and every bit of must_clear is clear.
struct TcpFlagMatch {
    uint8_t must_set = 0;
    uint8_t must_clear = 0;
};

// Which packets a rule looks at. An empty list or an unset field means "any".
// match.payload: patterns searched for in the L4 payload (dataplane/patterns/payload_database.h
// compiles them). literal: bytes as written, \xHH for any byte; regex: Hyperscan's PCRE subset;
// dns_suffix: a domain, matched as its label encoding (a DNS name that is the domain or ends in
// it).
struct PayloadPattern {
    enum class Kind : uint8_t { literal, regex, dns_suffix };
    Kind kind = Kind::literal;
    std::string text;  // literal: the bytes (escapes resolved); regex, dns_suffix: as written
    bool caseless = false;
    bool operator==(const PayloadPattern &) const = default;
};

class PayloadDatabase;  // dataplane/patterns/payload_database.h: the compiled patterns

struct PayloadMatch {
    std::vector<PayloadPattern> patterns;  // any of them matching makes the rule match
    uint32_t offset = 0;                   // the window: from offset bytes into the L4 payload,
    uint32_t depth = 0;                    // depth bytes long (0: to the payload's end)
    std::shared_ptr<const PayloadDatabase> compiled;  // compiled when the rules were validated
    bool present() const { return !patterns.empty(); }
};

struct RuleMatch {
    std::optional<uint8_t> proto;      // IP protocol number after the IPv6 extension chain
    std::vector<PortRange> dst_ports;  // only TCP/UDP packets with an L4 header can match
    std::vector<PortRange> src_ports;
    std::vector<Prefix> src;
    std::vector<Prefix> dst;
    TcpFlagMatch tcp_flags;  // only TCP packets with an L4 header can match a non-empty one
    PayloadMatch payload;    // only packets with an L4 header can match a present one
};

enum class RuleMode : uint8_t { enforce, shadow };
enum class TableFullPolicy : uint8_t { shared, pass, drop };
// How a rule counts its top refused sources: from sampled refusals past the first of each second
// (an estimate with its error stated at a confidence), or every refusal (Space-Saving's range).
enum class TopOffenders : uint8_t { sampled, exact };
// What happens to a packet the rule does not admit (for syn_auth and syn_proxy, also to a SYN
// from a source that has not proven itself yet): dropped, dropped and answered
// (dataplane/answer/answer.h), or (shape) held and sent when the limit admits it, dropped only
// when its key's queue is full. syn_proxy answers the unproven source's SYN as its server would
// and opens the connection to the server itself once the client's ACK proves the source
// (dataplane/pipeline/syn_proxy.h).
enum class RuleAction : uint8_t {
    drop,
    syn_auth,
    dns_truncate,
    tcp_rst,
    icmp_unreachable,
    shape,
    syn_proxy
};
// The actions under which a source proves itself (and is then verified for verified_ttl).
inline bool verifies_sources(RuleAction a) {
    return a == RuleAction::syn_auth || a == RuleAction::syn_proxy;
}
// As the rules file spells it.
inline const char *rule_action_name(RuleAction a) {
    switch (a) {
        case RuleAction::syn_auth:
            return "syn-auth";
        case RuleAction::syn_proxy:
            return "syn-proxy";
        case RuleAction::dns_truncate:
            return "dns-truncate";
        case RuleAction::tcp_rst:
            return "tcp-rst";
        case RuleAction::icmp_unreachable:
            return "icmp-unreachable";
        case RuleAction::shape:
            return "shape";
        case RuleAction::drop:
        default:
            return "drop";
    }
}

// How a rule counts: GCRA (the default), a fixed or a sliding window (the two-counter
// approximation), or a token bucket (the same admissions as GCRA, stated in tokens).
enum class RuleAlgorithm : uint8_t { gcra, fixed_window, sliding_window, token_bucket };
// As the rules file spells it.
inline const char *rule_algorithm_name(RuleAlgorithm a) {
    switch (a) {
        case RuleAlgorithm::fixed_window:
            return "fixed-window";
        case RuleAlgorithm::sliding_window:
            return "sliding-window";
        case RuleAlgorithm::token_bucket:
            return "token-bucket";
        case RuleAlgorithm::gcra:
        default:
            return "gcra";
    }
}
inline bool is_window(RuleAlgorithm a) {
    return a == RuleAlgorithm::fixed_window || a == RuleAlgorithm::sliding_window;
}

// Rate units: a rate is "N/unit" or "N/Munit", N packets per M units ("3/10min", "10000/d").
// "m" is another spelling of "min"; rates are printed with the first name of a unit.
struct RateUnit {
    const char *name;
    uint64_t period_ns;
};
inline constexpr RateUnit kRateUnits[] = {
    {"ms", 1'000'000ull},     {"s", 1'000'000'000ull},     {"min", 60'000'000'000ull},
    {"m", 60'000'000'000ull}, {"h", 3'600'000'000'000ull}, {"d", 86'400'000'000'000ull},
};
// The longest period a rate may have: 366 days.
inline constexpr uint64_t kMaxRatePeriodNs = 366 * 86'400'000'000'000ull;

// "10/s", "3/10min", "10000/d": the largest unit that divides the period.
inline std::string format_rate(uint64_t count, uint64_t period_ns) {
    static constexpr RateUnit kByLength[] = {kRateUnits[5], kRateUnits[4], kRateUnits[2],
                                             kRateUnits[1], kRateUnits[0]};
    for (const RateUnit &u : kByLength)
        if (period_ns % u.period_ns == 0) {
            const uint64_t m = period_ns / u.period_ns;
            return std::to_string(count) + "/" + (m == 1 ? "" : std::to_string(m)) + u.name;
        }
    return std::to_string(count) + "/" + std::to_string(period_ns) + "ns";  // not from a file
}

// A GCRA limit as written: count packets per period_ns, bursts of burst.
struct RateLimit {
    uint64_t count = 0;
    uint64_t period_ns = 0;
    uint32_t burst = 0;
    uint64_t interval_ns() const { return period_ns / count; }
};

// Caps on what floodgate sends back: every answer goes to a packet's source, which may be
// spoofed, so answers are limited per answered prefix and in total per worker core.
struct AnswerCaps {
    RateLimit per_destination{1000, 1'000'000'000, 100};
    uint8_t destination_ipv4_len = 24;
    uint8_t destination_ipv6_len = 64;
    RateLimit per_core{100000, 1'000'000'000, 1000};
};

// What a rule's limit is kept per: each source prefix (the default), each destination prefix
// (an aggregate: the total toward each protected address), each (source, destination) pair, or
// the whole rule as one bucket (none).
enum class KeyKind : uint8_t { src, dst, src_dst, none };
inline const char *key_kind_name(KeyKind k) {
    switch (k) {
        case KeyKind::dst:
            return "dst";
        case KeyKind::src_dst:
            return "src+dst";
        case KeyKind::none:
            return "none";
        case KeyKind::src:
        default:
            return "src";
    }
}
inline bool is_aggregate(KeyKind k) {
    return k == KeyKind::dst || k == KeyKind::none;
}

// Trust classes of a packet's source under an aggregate limit, most trusted first (allow-listed
// sources pass before any rule and are never shed). An aggregate limit sheds the lowest first.
#define FG_TRUST_CLASSES(X)                                                                    \
    X(established, "established") /* the server answered it: floodgate saw its reply go out */ \
    X(verified, "verified")       /* it answered a syn-auth cookie */                          \
    X(known, "known")             /* a per-source rule of the packet knew and admitted it */   \
    X(fresh, "new")               /* none of the above */
enum class TrustClass : uint8_t {
#define FG_X(id, text) id,
    FG_TRUST_CLASSES(FG_X)
#undef FG_X
        count
};
inline const char *trust_class_name(TrustClass c) {
    static constexpr const char *kNames[] = {
#define FG_X(id, text) text,
        FG_TRUST_CLASSES(FG_X)
#undef FG_X
    };
    return c < TrustClass::count ? kNames[static_cast<unsigned>(c)] : "?";
}
inline constexpr unsigned kTrustClasses = static_cast<unsigned>(TrustClass::count);

// An aggregate rule's burst kept for the classes above the lowest, in percent of the burst:
// established sources may use all of it, verified ones all but `established`, known ones all
// but established + verified, new ones what is left.
struct ClassReserve {
    uint8_t established = 30;
    uint8_t verified = 20;
    uint8_t known = 10;
    unsigned total() const { return unsigned{established} + verified + known; }
};

// Sources the protected side answered (seen inside to outside): remembered per prefix for ttl.
struct EstablishedOptions {
    uint64_t ttl_ns = 600'000'000'000ull;
    uint8_t ipv4_len = 32;
    uint8_t ipv6_len = 64;
};

// escalate: a source this rule keeps refusing is pushed down into the XDP tier's block map
// (bpf/) for ttl, once it has been refused at min_refused_rate or more for `after` (decided
// each second from the rule's top refused sources, off the workers;
// dataplane/service/escalation.h).
struct EscalateOptions {
    uint64_t after_ns = 0;  // 0: the rule does not escalate
    uint64_t min_refused_count = 1000;
    uint64_t min_refused_period_ns = 1'000'000'000ull;
    uint64_t ttl_ns = 600'000'000'000ull;
    // Announced upstream as a BGP FlowSpec discard rule while escalated (floodctl daemon
    // --flowspec; control/upstream/flowspec.h).
    bool flowspec = false;
    // Also dropped by the NIC, as an rte_flow rule on the outside port (Config::nic_tier;
    // dataplane/service/nic_feed.h).
    bool nic = false;
    bool enabled() const { return after_ns != 0; }
    bool operator==(const EscalateOptions &) const = default;
};

// nic_tier: the operator's blocks and the sources of rules that escalate with nic: true become
// rte_flow drop rules on the outside port (docs/nic-tier.md): at most max_rules at once,
// inserts_per_second new ones a second, each held for its source's own time and at most ttl.
// Read when the run starts.
struct NicTierOptions {
    bool set = false;  // the section is there: the tier is on
    uint32_t max_rules = 1000;
    uint32_t inserts_per_second = 20;
    uint64_t ttl_ns = 600'000'000'000ull;
    bool operator==(const NicTierOptions &) const = default;
};
inline constexpr uint32_t kMaxNicRules = 1u << 20;
inline constexpr uint32_t kMaxNicInsertsPerSecond = 100'000;

// share: cluster: the rule's keys are counted across the boxes of the cluster (Config::cluster)
// through the control plane; fallback: what the rule does while the box cannot sync: local (its
// limit divided by the last known number of live boxes) or fail-open (it refuses nothing,
// counting what it would have refused, as a shadow rule does).
enum class ClusterFallback : uint8_t { local, fail_open };
inline const char *cluster_fallback_name(ClusterFallback f) {
    return f == ClusterFallback::fail_open ? "fail-open" : "local";
}

// limit.adaptive: the rule's rate is learned, between min and max, from how fast the protected
// server answers the connections the rule admits, measured inline (dataplane/core/
// adaptive_limit.h; docs/limits.md, "Adaptive limits"): additive increase while a response comes
// within target, multiplicative decrease (at most once per window of samples) when one does
// not. It starts at the rule's rate.
struct AdaptiveOptions {
    bool enabled = false;
    uint64_t min_count = 0, min_period_ns = 0;  // rates as written
    uint64_t max_count = 0, max_period_ns = 0;
    uint64_t target_ns = 0;
    uint32_t window = 10;        // samples between two decreases, at least
    uint32_t decrease_pct = 20;  // a decrease takes this share off the rate
    uint32_t increase_pct = 5;   // a window of timely samples adds this share of max
    bool operator==(const AdaptiveOptions &) const = default;
};
inline constexpr uint64_t kMaxAdaptiveTargetNs = 60'000'000'000ull;
inline constexpr uint32_t kMaxAdaptiveWindow = 10000;

// action: shape: how much of a key's excess may wait, as packets or as the longest wait (one
// of them is set). A key whose queue would pass the bound drops the packet instead.
struct ShapeQueue {
    uint32_t packets = 0;
    uint64_t delay_ns = 0;
    bool operator==(const ShapeQueue &) const = default;
};
inline constexpr uint32_t kMaxShapePackets = 1u << 20;
inline constexpr uint64_t kMaxShapeDelayNs = 60'000'000'000ull;  // a minute

// syn_proxy: what floodgate's SYN-ACK tells clients of the servers behind the rule, as a
// server's would (announce: { mss, wscale, window }); each option only to a client that offered
// it. The defaults are Linux's on Ethernet.
struct ProxyAnnounce {
    uint16_t mss = 1460;
    uint8_t wscale = 7;
    uint16_t window = 65535;
    bool operator==(const ProxyAnnounce &) const = default;
};
inline constexpr uint16_t kMinAnnouncedMss = 536;
inline constexpr uint16_t kMaxAnnouncedMss = 9000;

struct Rule {
    std::string name;
    int line = 0;  // where the rule starts in its file, for messages (0: not from a file)
    RuleMatch match;
    KeyKind key_kind = KeyKind::src;
    uint8_t key_ipv4_len = 32;  // the source prefix (src and src_dst keys)
    uint8_t key_ipv6_len = 64;
    uint8_t dst_key_ipv4_len = 32;  // the destination prefix (dst and src_dst keys)
    uint8_t dst_key_ipv6_len = 64;
    ClassReserve reserve;  // aggregate keys (dst, none) only
    RuleAlgorithm algorithm = RuleAlgorithm::gcra;
    // The limit as written: rate_count packets per rate_period_ns, bursts of burst_pkts (0 for
    // a window algorithm: its window W is rate_period_ns and its limit N is rate_count).
    uint64_t rate_count = 0;
    uint64_t rate_period_ns = 0;
    uint32_t burst_pkts = 0;
    AdaptiveOptions adaptive;
    RuleAction action = RuleAction::drop;
    // dns_truncate: one refused query in slip is answered, the others dropped (0: none).
    uint32_t slip = 2;
    // syn_auth, syn_proxy: how long a source that answered a cookie stays verified.
    uint64_t verified_ttl_ns = 600'000'000'000ull;
    ProxyAnnounce announce;  // syn_proxy
    ShapeQueue queue;        // shape
    RuleMode mode = RuleMode::enforce;
    TableFullPolicy on_table_full = TableFullPolicy::shared;
    TopOffenders top_offenders = TopOffenders::sampled;
    EscalateOptions escalate;
    bool shared = false;  // share: cluster
    ClusterFallback fallback = ClusterFallback::local;

    // GCRA emission interval T = period / count, in whole nanoseconds (rounded down, so the
    // enforced rate is never below the configured one). Validation guarantees it is >= 1.
    uint64_t interval_ns() const { return rate_period_ns / rate_count; }
};

// Whether a key's state under rule a still means the same under rule b (a reload keeps it only
// then): GCRA and token-bucket share one reading of it (a TAT), whatever the rate; a window's
// state is read with its W, and a sliding window's also with its N (window.h).
inline bool limit_state_compatible(const Rule &a, const Rule &b) {
    const auto family = [](RuleAlgorithm x) {
        return x == RuleAlgorithm::token_bucket ? RuleAlgorithm::gcra : x;
    };
    if (family(a.algorithm) != family(b.algorithm)) return false;
    if (!is_window(a.algorithm)) return true;
    return a.rate_period_ns == b.rate_period_ns &&
           (a.algorithm == RuleAlgorithm::fixed_window || a.rate_count == b.rate_count);
}

// steering: { ipv4, ipv6 }: the source prefix by which packets are steered to workers, so
// that each prefix has one owner core (dataplane/core/steering.h); unset, floodgate derives it
// from the rules.
struct SteeringOptions {
    bool set = false;
    uint8_t ipv4_len = 32;
    uint8_t ipv6_len = 64;
};

// cluster: { name, redis, sync_ms, boxes, box_timeout }: the boxes that share the rules with
// `share: cluster` through Redis (floodctl daemon speaks to it; docs/cluster.md, "Several boxes").
// boxes: how many the cluster has until the first sync says (the fallback's divisor).
struct ClusterOptions {
    bool set = false;
    std::string name;
    std::string redis;  // host:port or unix:/path
    uint64_t sync_ns = 100'000'000ull;
    uint32_t boxes = 1;
    uint64_t box_timeout_ns = 3'000'000'000ull;
    // What the other boxes' allows may be here (docs/cluster.md, "Several boxes"): none at all, or
    // each no shorter than these prefix lengths and for at most this long.
    bool remote_allows = true;
    uint64_t remote_allow_max_ttl_ns = 3'600'000'000'000ull;  // an hour
    uint8_t remote_allow_min_ipv4 = 24;
    uint8_t remote_allow_min_ipv6 = 48;
    bool operator==(const ClusterOptions &) const = default;
};
inline constexpr uint64_t kMinClusterSyncNs = 10'000'000ull;      // 10 ms
inline constexpr uint64_t kMaxClusterSyncNs = 10'000'000'000ull;  // 10 s
inline constexpr uint32_t kMaxClusterBoxes = 1024;
inline constexpr size_t kMaxClusterNameLen = 64;

struct Config {
    std::string path;  // file it came from ("<string>" when parsed from text)
    std::vector<Prefix> allow;
    std::vector<Prefix> block;
    uint64_t table_entries_per_core = 1u << 20;
    // syn-proxy's connection table (dataplane/core/proxy_flows.h), sized and timed at start
    // like the limit table: connections per core, how long the server has to answer the SYN,
    // and how long an open connection may stay silent.
    uint64_t proxy_connections_per_core = 1u << 16;
    uint64_t proxy_server_timeout_ns = 3'000'000'000ull;
    uint64_t proxy_idle_timeout_ns = 900'000'000'000ull;
    SteeringOptions steering;
    ClusterOptions cluster;
    AnswerCaps answers;
    EstablishedOptions established;
    NicTierOptions nic_tier;
    std::vector<Rule> rules;
};

// Whether any of the config's rules is a syn-proxy rule.
inline bool has_syn_proxy(const Config &config) {
    for (const Rule &r : config.rules)
        if (r.action == RuleAction::syn_proxy) return true;
    return false;
}

// Limits that keep every later computation in range.
inline constexpr uint64_t kMaxTableEntriesPerCore = 1ull << 30;
inline constexpr uint64_t kMaxProxyConnectionsPerCore = 1ull << 24;
inline constexpr uint64_t kMaxProxyTimeoutNs = 86'400'000'000'000ull;  // a day (idle)
inline constexpr uint64_t kMaxProxyServerTimeoutNs = 60'000'000'000ull;
inline constexpr uint8_t kMaxAnnouncedWindowScale = 14;  // RFC 7323 2.3
inline constexpr size_t kMaxRules = 256;
inline constexpr uint32_t kMaxBurstPkts = 1u << 20;
inline constexpr size_t kMaxRuleNameLen = 64;
inline constexpr size_t kMaxPortRanges = 64;  // per dst_port or src_port list
inline constexpr uint32_t kMaxSlip = 100;
inline constexpr uint64_t kMaxVerifiedTtlNs = 86'400'000'000'000ull;  // a day
inline constexpr uint64_t kMaxEstablishedTtlNs = 86'400'000'000'000ull;
inline constexpr uint64_t kMaxEscalateNs = 86'400'000'000'000ull;  // after and ttl: a day
inline constexpr unsigned kMaxReserveTotal = 90;  // percent: new sources keep a tenth at least
// A window rule's N: what the cross-core merge record carries in 30 bits (Consumption).
inline constexpr uint64_t kMaxWindowPkts = (1u << 30) - 1;
inline constexpr uint64_t kMinWindowNs = 1'000'000;  // 1 ms
// Payload patterns: per rule, bytes per pattern, the window's offset and depth, and the
// compiled database's size (dataplane/patterns/payload_database.h).
inline constexpr size_t kMaxPayloadPatterns = 10000;
inline constexpr size_t kMaxPayloadPatternBytes = 1024;
inline constexpr uint32_t kMaxPayloadWindow = 65535;
inline constexpr size_t kMaxPayloadDatabaseBytes = 64u << 20;

}  // namespace floodgate
