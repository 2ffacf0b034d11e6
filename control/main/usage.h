// floodctl's usage: each command's, shown alone with its usage errors (exit 2) and all together
// by --help.
#pragma once

#include <string>

namespace floodgate {

std::string usage_text();
// The error, then the usage of the one command it is about (all of them when there is none);
// returns 2, the exit code of a usage error.
int usage_error(const std::string &command, const std::string &why);

}  // namespace floodgate
