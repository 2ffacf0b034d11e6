// The rules model: what an operator's rules file says, validated, as plain data. Both processes
// hold it (floodctl to diff and show, the dataplane to compile into its RuleSet); the rules
// loader (rules/) is the only way to make one from text, and refuses anything outside the
// limits below, so every later computation stays in range.
#pragma once

#include <cstddef>
#include <cstdint>
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
struct RuleMatch {
    std::optional<uint8_t> proto;      // IP protocol number after the IPv6 extension chain
    std::vector<PortRange> dst_ports;  // only TCP/UDP packets with an L4 header can match
    std::vector<PortRange> src_ports;
    std::vector<Prefix> src;
    std::vector<Prefix> dst;
    TcpFlagMatch tcp_flags;  // only TCP packets with an L4 header can match a non-empty one
};

enum class RuleMode : uint8_t { enforce, shadow };
enum class TableFullPolicy : uint8_t { shared, pass, drop };
enum class RuleAction : uint8_t { drop };

struct Rule {
    std::string name;
    int line = 0;  // where the rule starts in its file, for messages (0: not from a file)
    RuleMatch match;
    uint8_t key_ipv4_len = 32;
    uint8_t key_ipv6_len = 64;
    // The limit as written: rate_count packets per rate_period_ns, bursts of burst_pkts.
    uint64_t rate_count = 0;
    uint64_t rate_period_ns = 0;
    uint32_t burst_pkts = 0;
    RuleAction action = RuleAction::drop;
    RuleMode mode = RuleMode::enforce;
    TableFullPolicy on_table_full = TableFullPolicy::shared;

    // GCRA emission interval T = period / count, in whole nanoseconds (rounded down, so the
    // enforced rate is never below the configured one). Validation guarantees it is >= 1.
    uint64_t interval_ns() const { return rate_period_ns / rate_count; }
};

struct Config {
    std::string path;  // file it came from ("<string>" when parsed from text)
    std::vector<Prefix> allow;
    std::vector<Prefix> block;
    uint64_t table_entries_per_core = 1u << 20;
    std::vector<Rule> rules;
};

// Limits that keep every later computation in range.
inline constexpr uint64_t kMaxTableEntriesPerCore = 1ull << 30;
inline constexpr size_t kMaxRules = 256;
inline constexpr uint32_t kMaxBurstPkts = 1u << 20;
inline constexpr size_t kMaxRuleNameLen = 64;
inline constexpr size_t kMaxPortRanges = 64;  // per dst_port or src_port list

}  // namespace floodgate
