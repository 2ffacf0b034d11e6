// floodctl daemon's log: one line on stderr, flushed at once (the journal reads it as it comes).
#pragma once

#include <cstdio>
#include <string>

namespace floodgate {

inline void daemon_log(const std::string &line) {
    std::fprintf(stderr, "floodctl daemon: %s\n", line.c_str());
    std::fflush(stderr);
}

}  // namespace floodgate
