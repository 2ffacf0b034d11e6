// Reading a rules document's shapes: maps with the field names they allow, lists, scalars,
// decimal integers and names from a table, each value with the path and line of its node, so
// that every check can throw ConfigError at the first problem with where it is. What the
// fields mean is the rules format's (rules/config_parser.h). Internal to rules/, and read
// with by floodctl daemon's web config (control/daemon/web_config.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dataplane/api/rules.h"
#include "rules/config_error.h"
#include "rules/doc.h"

namespace floodgate::validation {

// "a scalar", "a list", "a map" or "nothing", for messages.
const char *describe(const DocNode &node);

inline std::string_view name_of(std::string_view name) {
    return name;
}
inline std::string_view name_of(const RateUnit &unit) {
    return unit.name;
}
template <typename T>
std::string_view name_of(const std::pair<std::string_view, T> &entry) {
    return entry.first;
}

// "a, b, c", for the "expected one of" part of messages: from a list of names or from the
// names of a {name, value} table.
template <typename Range>
std::string join_names(const Range &range) {
    std::string out;
    for (const auto &entry : range) {
        if (!out.empty()) out += ", ";
        out += name_of(entry);
    }
    return out;
}

inline const DocNode kNull;

// A value together with where it is: its field path for messages and the line to report. An
// empty value ("limit:" followed by nothing) is reported at the line of its key.
struct Field {
    const DocNode *node = &kNull;
    std::string path;
    int line = 0;
};

// The entries of one map, already checked against the field names the format allows.
struct Fields {
    Field self;
    std::vector<std::pair<std::string_view, Field>> entries;

    const Field *find(std::string_view name) const {
        for (const auto &[key, field] : entries)
            if (key == name) return &field;
        return nullptr;
    }
};

// The checks every part of the format is read with (doc_reader.cpp). file names the document
// in messages.
class DocReader {
  public:
    explicit DocReader(const std::string &file) : file_(file) {}

  protected:
    [[noreturn]] void fail(const Field &at, const std::string &reason) const {
        throw ConfigError(file_, at.line, at.path, reason);
    }

    static Field child(const Field &map, std::string_view name);
    Fields fields(const Field &map, std::initializer_list<std::string_view> allowed) const;
    const Field &require(const Fields &f, std::string_view name) const;
    std::vector<Field> items(const Field &list, bool null_is_empty) const;
    std::vector<Field> one_or_more(const Field &field) const;
    const std::string &scalar(const Field &field) const;
    uint64_t integer(const Field &field, uint64_t lo, uint64_t hi) const;
    uint64_t integer_text(const Field &field, std::string_view text, uint64_t lo,
                          uint64_t hi) const;

    // A scalar that must be one of the names of options; its value.
    template <typename T, size_t N>
    T choice(const Field &field, const std::pair<std::string_view, T> (&options)[N]) const {
        const std::string &text = scalar(field);
        for (const auto &[name, value] : options)
            if (name == text) return value;
        fail(field, "unknown value '" + text + "' (expected one of: " + join_names(options) + ")");
    }

    const std::string &file_;
};

}  // namespace floodgate::validation
