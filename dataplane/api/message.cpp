#include "dataplane/api/message.h"

#include "dataplane/api/control_protocol.h"

namespace floodgate {

namespace {

// A first pass with nlohmann's SAX parser (iterative, so deep input cannot overflow the stack)
// that only counts: nesting depth and values. The DOM, which costs about 50 bytes a value, is
// built only for a message within both limits.
class Bounds : public nlohmann::json_sax<nlohmann::json> {
  public:
    bool null() override { return value(); }
    bool boolean(bool) override { return value(); }
    bool number_integer(number_integer_t) override { return value(); }
    bool number_unsigned(number_unsigned_t) override { return value(); }
    bool number_float(number_float_t, const string_t &) override { return value(); }
    bool string(string_t &) override { return value(); }
    bool binary(binary_t &) override { return value(); }
    bool start_object(std::size_t) override { return open(); }
    bool end_object() override { return close(); }
    bool start_array(std::size_t) override { return open(); }
    bool end_array() override { return close(); }
    bool key(string_t &) override { return true; }
    bool parse_error(std::size_t position, const std::string &,
                     const nlohmann::detail::exception &) override {
        error = "not JSON (at byte " + std::to_string(position) + ")";
        return false;
    }
    std::string error;

  private:
    bool value() {
        if (++values_ <= kMaxMessageValues) return true;
        error = "message has more than " + std::to_string(kMaxMessageValues) + " values";
        return false;
    }
    bool open() {
        if (++depth_ <= kMaxMessageDepth) return value();
        error = "message nested too deeply";
        return false;
    }
    bool close() {
        --depth_;
        return true;
    }
    size_t values_ = 0;
    unsigned depth_ = 0;
};

nlohmann::json parse_object(const std::string &line) {
    if (line.size() > kMaxMessageBytes) throw MessageError("message too long");
    Bounds bounds;
    if (!nlohmann::json::sax_parse(line, &bounds)) throw MessageError(bounds.error);
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
