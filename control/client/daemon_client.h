// One request from the floodctl CLI to its daemon (control/daemon/daemon.h), one JSON line each
// way.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace floodgate {

// Sends request on socket and reads the reply. False, with why printed on stderr ("floodctl:
// ..."), when the daemon cannot be reached or refuses; with json_out a refusal's reply is also
// printed on stdout, so that -j always prints the daemon's answer.
bool ask_daemon(const std::string &socket, bool json_out, const nlohmann::json &request,
                nlohmann::json *reply);

// The same, printing nothing: why it failed goes to *why. The default timeout leaves a rules
// load its time.
bool ask_daemon_quietly(const std::string &socket, const nlohmann::json &request,
                        nlohmann::json *reply, std::string *why, int timeout_ms = 90000);

}  // namespace floodgate
