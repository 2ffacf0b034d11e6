#include "control/message.h"

#include "dataplane/api/control_protocol.h"

namespace floodgate {

namespace {
// Deepest nesting of objects and arrays, outside strings. Bounds the parser's work before it
// starts; the JSON grammar itself is checked by the parser.
unsigned nesting_depth(const std::string &s) {
    unsigned depth = 0, deepest = 0;
    bool in_string = false, escaped = false;
    for (char ch : s) {
        if (in_string) {
            if (escaped)
                escaped = false;
            else if (ch == '\\')
                escaped = true;
            else if (ch == '"')
                in_string = false;
            continue;
        }
        if (ch == '"') {
            in_string = true;
        } else if (ch == '{' || ch == '[') {
            if (++depth > deepest) deepest = depth;
        } else if ((ch == '}' || ch == ']') && depth > 0) {
            --depth;
        }
    }
    return deepest;
}

nlohmann::json parse_object(const std::string &line) {
    if (line.size() > kMaxMessageBytes) throw MessageError("message too long");
    if (nesting_depth(line) > kMaxMessageDepth) throw MessageError("message nested too deeply");
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded()) throw MessageError("not JSON");
    if (!j.is_object()) throw MessageError("not a JSON object");
    return j;
}
}  // namespace

nlohmann::json parse_request(const std::string &line) {
    nlohmann::json j = parse_object(line);
    get_string(j, "cmd");
    return j;
}

nlohmann::json parse_response(const std::string &line) {
    nlohmann::json j = parse_object(line);
    auto it = j.find("ok");
    if (it == j.end() || !it->is_boolean()) throw MessageError("response without \"ok\"");
    return j;
}

std::string get_string(const nlohmann::json &j, const char *field) {
    auto it = j.find(field);
    if (it == j.end()) throw MessageError(std::string("missing field \"") + field + "\"");
    if (!it->is_string())
        throw MessageError(std::string("field \"") + field + "\" is not a string");
    return it->get<std::string>();
}

long long get_int(const nlohmann::json &j, const char *field, long long lo, long long hi,
                  long long absent) {
    auto it = j.find(field);
    if (it == j.end() || it->is_null()) return absent;
    if (!it->is_number_integer())
        throw MessageError(std::string("field \"") + field + "\" is not an integer");
    // Unsigned values above INT64_MAX are out of range either way.
    if (it->is_number_unsigned() &&
        it->get<unsigned long long>() > static_cast<unsigned long long>(hi))
        throw MessageError(std::string("field \"") + field + "\" is out of range");
    long long v = it->get<long long>();
    if (v < lo || v > hi)
        throw MessageError(std::string("field \"") + field + "\" is out of range");
    return v;
}

bool get_bool(const nlohmann::json &j, const char *field, bool absent) {
    auto it = j.find(field);
    if (it == j.end()) return absent;
    if (!it->is_boolean())
        throw MessageError(std::string("field \"") + field + "\" is not a boolean");
    return it->get<bool>();
}

nlohmann::json error_reply(const std::string &why) {
    return {{"ok", false}, {"error", why}};
}

}  // namespace floodgate
