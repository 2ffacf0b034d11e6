#include "control/cluster/remote_allows.h"

#include <algorithm>

#include "dataplane/api/prefix.h"

namespace floodgate {

RemoteAllowPolicy RemoteAllowPolicy::from_status(const nlohmann::json &cluster) {
    RemoteAllowPolicy p;
    p.take = cluster.value("remote_allows", p.take);
    p.max_ttl_s = cluster.value("remote_allow_max_ttl_s", p.max_ttl_s);
    p.min_len_ipv4 = cluster.value("remote_allow_min_ipv4", p.min_len_ipv4);
    p.min_len_ipv6 = cluster.value("remote_allow_min_ipv6", p.min_len_ipv6);
    return p;
}

void RemoteAllows::start_round(uint32_t boxes) {
    taken_ = 0;
    bound_ = kRemoteAllowsPerBox * (std::max<uint32_t>(boxes, 2) - 1);
}

std::optional<long long> RemoteAllows::take(const RemoteAllowPolicy &policy,
                                            const std::string &prefix, uint64_t ttl_ms) {
    if (!policy.take) {
        ++off_;
        return std::nullopt;
    }
    std::string why;
    const std::optional<Prefix> p = parse_prefix(prefix, &why);
    if (!p) {
        ++malformed_;
        return std::nullopt;
    }
    if (p->len < (p->family == 4 ? policy.min_len_ipv4 : policy.min_len_ipv6)) {
        ++short_;
        return std::nullopt;
    }
    if (++taken_ > bound_) {
        ++over_count_;
        return std::nullopt;
    }
    const uint64_t ttl_s = ttl_ms / 1000 + (ttl_ms % 1000 != 0);
    if (ttl_s == 0 || ttl_s > policy.max_ttl_s) {
        ++ttl_clamped_;
        return static_cast<long long>(policy.max_ttl_s);
    }
    return static_cast<long long>(ttl_s);
}

nlohmann::json RemoteAllows::counts() const {
    return {{"off", off_},
            {"short", short_},
            {"malformed", malformed_},
            {"over_count", over_count_},
            {"ttl_clamped", ttl_clamped_}};
}

}  // namespace floodgate
