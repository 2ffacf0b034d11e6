// The control protocol's reply to a refused rules file: the error reply (dataplane/api/message.h)
// with the ConfigError's file, line and field beside its message, so that floodctl can point at
// the mistake. One mapping for both sides that refuse files: the dataplane's service and
// floodctl daemon.
#pragma once

#include <nlohmann/json.hpp>

#include "dataplane/api/message.h"
#include "rules/config_error.h"

namespace floodgate {

// Json: nlohmann::json or nlohmann::ordered_json, the type the caller's reply is built in.
template <class Json = nlohmann::json>
Json config_error_reply(const ConfigError &e) {
    Json reply = error_reply(e.what());
    reply["file"] = e.file();
    reply["line"] = e.line();
    reply["field"] = e.field();
    return reply;
}

}  // namespace floodgate
