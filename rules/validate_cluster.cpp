// cluster: the boxes that share rules through Redis (rules/config_parser.h, docs/cluster.md,
// "Several boxes").
#include "dataplane/api/numbers.h"
#include "rules/config_parser.h"
#include "rules/redis_address.h"

namespace floodgate::validation {

// cluster: { name, redis, sync_ms (100), boxes (1), box_timeout (3s), remote_allows (true),
// remote_allow_max_ttl (1h), remote_allow_min_ipv4 (24), remote_allow_min_ipv6 (48) }.
ClusterOptions ConfigParser::cluster(const Field &field) const {
    ClusterOptions c;
    c.set = true;
    // A box's login and TLS are its daemon's (control/cluster/store_auth.h): named here only to
    // say where they go instead.
    const Fields f =
        fields(field, {"name", "redis", "sync_ms", "boxes", "box_timeout", "remote_allows",
                       "remote_allow_max_ttl", "remote_allow_min_ipv4", "remote_allow_min_ipv6",
                       "user", "password", "password_file", "tls"});
    for (const char *own : {"user", "password", "password_file", "tls"})
        if (const Field *x = f.find(own))
            fail(*x, std::string(own) +
                         " is not the rules file's (the same on every box): give floodctl daemon "
                         "--redis-user, --redis-password-file and --redis-tls-* on each box");
    const Field &name = require(f, "name");
    c.name = scalar(name);
    if (c.name.empty() || c.name.size() > kMaxClusterNameLen)
        fail(name, "name must be 1-" + std::to_string(kMaxClusterNameLen) + " characters");
    for (char ch : c.name)
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '_' || ch == '.' || ch == '-'))
            fail(name, "name '" + c.name + "' may use only A-Z a-z 0-9 _ . -");
    const Field &redis = require(f, "redis");
    c.redis = scalar(redis);
    std::string why;
    // Only its shape: whether it answers is the daemon's to find out.
    if (!parse_redis_address(c.redis, &why)) fail(redis, "'" + c.redis + "' " + why);
    if (const Field *s = f.find("sync_ms"))
        c.sync_ns =
            integer(*s, kMinClusterSyncNs / 1'000'000, kMaxClusterSyncNs / 1'000'000) * 1'000'000;
    if (const Field *b = f.find("boxes"))
        c.boxes = static_cast<uint32_t>(integer(*b, 1, kMaxClusterBoxes));
    if (const Field *t = f.find("box_timeout")) {
        c.box_timeout_ns = duration_ns(*t, kMaxEscalateNs);  // a day
        if (c.box_timeout_ns < 2 * c.sync_ns)
            fail(*t, "box_timeout must be at least two sync intervals");
    }
    static constexpr std::pair<std::string_view, bool> kYesNo[] = {{"true", true},
                                                                   {"false", false}};
    if (const Field *a = f.find("remote_allows")) c.remote_allows = choice(*a, kYesNo);
    // An allow another box asks for lasts a day at most, and covers a /8 or a /16 at most:
    // past that it is the operator's own allow list, not a box's.
    if (const Field *t = f.find("remote_allow_max_ttl"))
        c.remote_allow_max_ttl_ns = duration_ns(*t, kMaxEscalateNs);
    if (const Field *v4 = f.find("remote_allow_min_ipv4"))
        c.remote_allow_min_ipv4 = static_cast<uint8_t>(integer(*v4, 8, 32));
    if (const Field *v6 = f.find("remote_allow_min_ipv6"))
        c.remote_allow_min_ipv6 = static_cast<uint8_t>(integer(*v6, 16, 128));
    return c;
}

}  // namespace floodgate::validation
