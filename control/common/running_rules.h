// The rules a dataplane runs, from its `rules` reply (dataplane/api/control_protocol.h): the
// file's document with the `floodctl rule` mode switches applied. The daemon diffs a new file
// against them; `floodctl rules show` prints them.
#pragma once

#include <nlohmann/json.hpp>

#include "dataplane/api/rules.h"

namespace floodgate {

// Throws ConfigError when the reply's document does not validate here.
Config running_rules(const nlohmann::json &rules_reply);

}  // namespace floodgate
