// Reading one control-protocol message (dataplane/api/control_protocol.h) safely: size and
// nesting are checked before the JSON parser sees it, and fields are read with their types
// checked, so a hostile or broken peer gets an error reply, never a crash.
#pragma once

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace floodgate {

// A request that is not what the protocol says; the message is sent back as the error.
class MessageError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

// Parses one line into a JSON object with a string "cmd". Throws MessageError.
nlohmann::json parse_request(const std::string &line);
// Parses one response line into a JSON object with a boolean "ok". Throws MessageError.
nlohmann::json parse_response(const std::string &line);

// Typed field access; throw MessageError naming the field.
std::string get_string(const nlohmann::json &j, const char *field);
long long get_int(const nlohmann::json &j, const char *field, long long lo, long long hi,
                  long long absent);
bool get_bool(const nlohmann::json &j, const char *field, bool absent);

// {"ok": false, "error": why}
nlohmann::json error_reply(const std::string &why);

}  // namespace floodgate
