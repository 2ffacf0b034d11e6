// One call of the gobgp CLI (control/upstream/flowspec.h says why the CLI): a process run
// without a shell, its output bounded in bytes and time, since it is outside input.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace floodgate {

// Runs argv (no shell; stdin /dev/null) and keeps its stdout in *out, up to max_output_bytes:
// past that, or past timeout_ms, it is killed and the call failed. On failure, *error says the
// command, why, and the first line the process said.
bool run_cli(const std::vector<std::string> &argv, int timeout_ms, size_t max_output_bytes,
             std::string *out, std::string *error);

}  // namespace floodgate
