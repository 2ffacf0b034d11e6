// The other boxes' allows as this box takes them (docs/cluster.md, "Several boxes"). A box that
// holds valid keys may still be compromised, and an allow switches a limit off: so each one is
// taken only as the rules file's cluster section allows (ClusterOptions, dataplane/api/rules.h).
//   remote_allows: false      none at all (refused: off);
//   remote_allow_min_ipv4/6   none shorter, so never 0.0.0.0/0 or ::/0 (refused: short);
//   kRemoteAllowsPerBox       per other box and sync, the rest refused (over_count);
//   remote_allow_max_ttl      a TTL of 0 ("never expires") or past it is it (ttl_clamped).
// A prefix that is no prefix is refused too (malformed). Each reason counted.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace floodgate {

// Far more than an operator adds in an interval, far fewer than would crowd the overrides.
inline constexpr uint64_t kRemoteAllowsPerBox = 16;

// The cluster section's bounds, from the dataplane's status (its "cluster" object).
struct RemoteAllowPolicy {
    bool take = true;
    uint64_t max_ttl_s = 3600;
    unsigned min_len_ipv4 = 24, min_len_ipv6 = 48;
    static RemoteAllowPolicy from_status(const nlohmann::json &cluster);
};

class RemoteAllows {
  public:
    // A new sync round: its allows count from 0 again, for `boxes` live boxes (this one among
    // them).
    void start_round(uint32_t boxes);
    // The TTL in seconds to give the allow of `prefix` told with ttl_ms (0: never expires), or
    // nothing when it is refused; either way counted.
    std::optional<long long> take(const RemoteAllowPolicy &policy, const std::string &prefix,
                                  uint64_t ttl_ms);
    // {"off", "short", "malformed", "over_count", "ttl_clamped"}: for status and metrics.
    nlohmann::json counts() const;

  private:
    uint64_t taken_ = 0, bound_ = kRemoteAllowsPerBox;
    uint64_t off_ = 0, short_ = 0, malformed_ = 0, over_count_ = 0, ttl_clamped_ = 0;
};

}  // namespace floodgate
