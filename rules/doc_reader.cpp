// Reading a rules document's shapes, each value with its path and line (rules/doc_reader.h).
#include "rules/doc_reader.h"

#include <algorithm>
#include <charconv>

namespace floodgate::validation {

const char *describe(const DocNode &node) {
    switch (node.kind) {
        case DocNode::Kind::scalar:
            return "a scalar";
        case DocNode::Kind::list:
            return "a list";
        case DocNode::Kind::map:
            return "a map";
        default:
            return "nothing";
    }
}

// Path and line of a field that is absent, reported at the map that should hold it.
Field DocReader::child(const Field &map, std::string_view name) {
    const std::string path =
        map.path.empty() ? std::string(name) : map.path + "." + std::string(name);
    return Field{&kNull, path, map.line};
}

Fields DocReader::fields(const Field &map, std::initializer_list<std::string_view> allowed) const {
    if (map.node->kind != DocNode::Kind::map)
        fail(map, std::string("map expected, found ") + describe(*map.node));
    Fields out{map, {}};
    for (const DocEntry &e : map.node->entries) {
        const std::string_view name = e.key;
        const int line =
            e.value.kind == DocNode::Kind::null || e.value.line == 0 ? e.line : e.value.line;
        Field entry{&e.value, child(map, name).path, line != 0 ? line : map.line};
        if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
            entry.line = e.line != 0 ? e.line : map.line;
            fail(entry, "unknown field (expected one of: " + join_names(allowed) + ")");
        }
        // A repeated key: refuse instead of using one of them.
        if (out.find(name) != nullptr) {
            entry.line = e.line != 0 ? e.line : map.line;
            fail(entry, "field given twice");
        }
        out.entries.emplace_back(name, std::move(entry));
    }
    return out;
}

const Field &DocReader::require(const Fields &f, std::string_view name) const {
    const Field *field = f.find(name);
    if (field == nullptr) fail(child(f.self, name), "missing required field");
    return *field;
}

// Elements of a list. When null_is_empty, an empty value counts as an empty list, so that
// "rules:" with every entry commented out still loads.
std::vector<Field> DocReader::items(const Field &list, bool null_is_empty) const {
    std::vector<Field> out;
    if (null_is_empty && list.node->kind == DocNode::Kind::null) return out;
    if (list.node->kind != DocNode::Kind::list)
        fail(list, std::string("list expected, found ") + describe(*list.node));
    out.reserve(list.node->items.size());
    size_t i = 0;
    for (const DocNode &node : list.node->items) {
        const int line = node.kind == DocNode::Kind::null || node.line == 0 ? list.line : node.line;
        out.push_back(Field{&node, list.path + "[" + std::to_string(i) + "]", line});
        ++i;
    }
    return out;
}

// A value that may be written alone or as a list: "53" or "[53, 80]". An empty list is
// refused because in RuleMatch it would mean "any", the opposite of what it looks like.
std::vector<Field> DocReader::one_or_more(const Field &field) const {
    if (field.node->kind != DocNode::Kind::list) return {field};
    std::vector<Field> out = items(field, false);
    if (out.empty()) fail(field, "empty list (leave the field out to match any)");
    return out;
}

const std::string &DocReader::scalar(const Field &field) const {
    if (field.node->kind != DocNode::Kind::scalar)
        fail(field, std::string("scalar expected, found ") + describe(*field.node));
    return field.node->text;
}

// A decimal integer in [lo, hi]: digits only, so that what is accepted is exactly what
// the operator wrote.
uint64_t DocReader::integer(const Field &field, uint64_t lo, uint64_t hi) const {
    return integer_text(field, scalar(field), lo, hi);
}

uint64_t DocReader::integer_text(const Field &field, std::string_view text, uint64_t lo,
                                 uint64_t hi) const {
    const std::string range = " (" + std::to_string(lo) + "-" + std::to_string(hi) + ")";
    uint64_t value = 0;
    const bool negative = !text.empty() && text[0] == '-';
    const std::string_view digits = negative ? text.substr(1) : text;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (digits.empty() || end != digits.data() + digits.size() ||
        (ec != std::errc() && ec != std::errc::result_out_of_range))
        fail(field, "'" + std::string(text) + "' is not an integer");
    if (negative || ec == std::errc::result_out_of_range || value < lo || value > hi)
        fail(field, std::string(text) + " is out of range" + range);
    return value;
}

}  // namespace floodgate::validation
