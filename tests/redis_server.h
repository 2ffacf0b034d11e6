// The redis-server the store's tests start (scripts/lib.sh installs it): one name for every
// test file, since the ASan build compiles a target's files as one.
#pragma once

namespace floodgate {

inline constexpr const char *kRedisServer = "/usr/bin/redis-server";

}  // namespace floodgate
