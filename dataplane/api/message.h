// Reading one control-protocol message (dataplane/api/control_protocol.h) safely: size and
// nesting are checked before the JSON parser sees it, and fields are read with their types
// checked, so a hostile or broken peer gets an error reply, never a crash.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace floodgate {

// A request that is not what the protocol says; the message is sent back as the error.
class MessageError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

// Parses one line into a JSON object with a string "cmd", named once. Throws MessageError.
nlohmann::json parse_request(const std::string &line);
// The string value of the line's first top-level "cmd", found without parsing the line: its
// members before "cmd" are skipped, not read (floodctl's requests put it first), and the rest is
// not looked at. For routing a request before it is decoded (a load decodes on a thread of its
// own); parse_request still refuses the line if it is not what this says (a second "cmd", bad
// JSON). nullopt where there is no such string, or it holds an escape.
std::optional<std::string_view> read_command(std::string_view line);
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
