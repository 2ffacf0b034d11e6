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
    bool key(string_t &k) override {
        if (depth_ != 1 || k != kCommandField || ++commands_ == 1) return true;
        error = std::string("field \"") + kCommandField + "\" given twice";
        return false;
    }
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
    unsigned commands_ = 0;  // top-level "cmd" members
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

size_t skip_space(std::string_view s, size_t i) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) ++i;
    return i;
}

// s[i] is a string's opening quote: the index past its closing one (npos: unterminated).
size_t skip_string(std::string_view s, size_t i) {
    for (++i; i < s.size(); ++i) {
        if (s[i] == '\\')
            ++i;
        else if (s[i] == '"')
            return i + 1;
    }
    return std::string_view::npos;
}

// The index past the value at s[i]: strings to their closing quote, objects and arrays by
// counting brackets outside strings, scalars to the next delimiter. Not validated.
size_t skip_value(std::string_view s, size_t i) {
    unsigned depth = 0;
    while (i < s.size()) {
        const char c = s[i];
        if (c == '"') {
            i = skip_string(s, i);
            if (i == std::string_view::npos) return i;
            if (depth == 0) return i;
            continue;
        }
        if (c == '{' || c == '[') {
            ++depth;
        } else if (c == '}' || c == ']') {
            if (depth == 0) return i;  // a scalar ended by its container's close
            if (--depth == 0) return i + 1;
        } else if (depth == 0 && (c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r')) {
            return i;
        }
        ++i;
    }
    return std::string_view::npos;
}

}  // namespace

std::optional<std::string_view> read_command(std::string_view line) {
    size_t i = skip_space(line, 0);
    if (i >= line.size() || line[i] != '{') return std::nullopt;
    for (i = skip_space(line, i + 1); i < line.size() && line[i] == '"';) {
        const size_t key_end = skip_string(line, i);
        if (key_end == std::string_view::npos) return std::nullopt;
        const std::string_view key = line.substr(i + 1, key_end - i - 2);
        i = skip_space(line, key_end);
        if (i >= line.size() || line[i] != ':') return std::nullopt;
        i = skip_space(line, i + 1);
        if (key == kCommandField) {
            if (i >= line.size() || line[i] != '"') return std::nullopt;
            const size_t end = skip_string(line, i);
            if (end == std::string_view::npos) return std::nullopt;
            const std::string_view name = line.substr(i + 1, end - i - 2);
            if (name.find('\\') != std::string_view::npos) return std::nullopt;
            return name;
        }
        i = skip_value(line, i);
        if (i == std::string_view::npos) return std::nullopt;
        i = skip_space(line, i);
        if (i >= line.size() || line[i] != ',') return std::nullopt;
        i = skip_space(line, i + 1);
    }
    return std::nullopt;
}

nlohmann::json parse_request(const std::string &line) {
    nlohmann::json j = parse_object(line);
    get_string(j, kCommandField);
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
