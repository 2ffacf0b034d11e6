// Reading the dataplane's replies and writing metric families (control/metrics/exposition.h).
#include "control/metrics/exposition.h"

#include <charconv>
#include <cmath>

namespace floodgate::exposition {

const json *member(const json *obj, const char *key) {
    if (obj == nullptr || !obj->is_object()) return nullptr;
    auto it = obj->find(key);
    return it == obj->end() ? nullptr : &*it;
}

const json *array_at(const json *obj, const char *key) {
    const json *j = member(obj, key);
    return j != nullptr && j->is_array() ? j : nullptr;
}

std::optional<Value> number(const json &j) {
    if (j.is_number_unsigned()) return Value{j.get<uint64_t>()};
    if (j.is_number_integer()) return Value{j.get<int64_t>()};
    if (j.is_number_float()) return Value{j.get<double>()};
    return std::nullopt;
}

std::optional<Value> number_at(const json *obj, const char *key) {
    const json *j = member(obj, key);
    return j != nullptr ? number(*j) : std::nullopt;
}

std::optional<Value> seconds_from_ns(std::optional<Value> ns) {
    if (!ns) return std::nullopt;
    return std::visit([](auto v) { return Value{static_cast<double>(v) / 1e9}; }, *ns);
}

std::optional<std::string> label_at(const json *obj, const char *key) {
    const json *j = member(obj, key);
    if (j == nullptr) return std::nullopt;
    if (j->is_string()) return j->get<std::string>();
    if (j->is_number_unsigned()) return std::to_string(j->get<uint64_t>());
    if (j->is_number_integer()) return std::to_string(j->get<int64_t>());
    return std::nullopt;
}

namespace {

void append_value(std::string &out, const Value &value) {
    const double *d = std::get_if<double>(&value);
    // The format's spellings, which are not to_chars's ("nan", "inf").
    if (d != nullptr && std::isnan(*d)) {
        out += "NaN";
    } else if (d != nullptr && std::isinf(*d)) {
        out += *d > 0 ? "+Inf" : "-Inf";
    } else {
        // Shortest form that reads back to the same value; integers without a decimal point.
        char buf[32];  // a double's shortest form takes at most 24
        auto r =
            std::visit([&](auto v) { return std::to_chars(buf, buf + sizeof(buf), v); }, value);
        out.append(buf, r.ptr);
    }
}

// Label values escape backslash, double quote and newline; HELP texts the same but the quote.
void append_escaped(std::string &out, std::string_view s, bool label_value) {
    for (char c : s) {
        if (c == '\\')
            out += "\\\\";
        else if (c == '\n')
            out += "\\n";
        else if (c == '"' && label_value)
            out += "\\\"";
        else
            out += c;
    }
}

bool negative(const Value &value) {
    if (const int64_t *i = std::get_if<int64_t>(&value)) return *i < 0;
    if (const double *d = std::get_if<double>(&value)) return !(*d >= 0);  // NaN too
    return false;
}

}  // namespace

void Family::add(std::initializer_list<Label> labels, std::optional<Value> value) {
    if (!value || (type_ == Type::counter && negative(*value))) return;
    samples_ += name_;
    if (labels.size() != 0) {
        char sep = '{';
        for (const Label &l : labels) {
            samples_ += sep;
            samples_ += l.name;
            samples_ += "=\"";
            append_escaped(samples_, l.value, true);
            samples_ += '"';
            sep = ',';
        }
        samples_ += '}';
    }
    samples_ += ' ';
    append_value(samples_, *value);
    samples_ += '\n';
}

void Family::write(std::string &out) const {
    out += "# HELP ";
    out += name_;
    out += ' ';
    append_escaped(out, help_, false);
    out += "\n# TYPE ";
    out += name_;
    out += type_ == Type::counter ? " counter\n" : " gauge\n";
    out += samples_;
}

}  // namespace floodgate::exposition
