// A rules document: the tree of maps, lists and scalars a rules file holds, each with its line,
// before any of it is interpreted. It is the only input the validator (rules/load.h) reads, so
// the YAML of a file and the JSON of a control message are checked by the same code.
//
// Both builders are bounded whatever their input: at most kMaxDocBytes of input, kMaxDocDepth
// levels of nesting, kMaxDocNodes nodes and kMaxDocTextBytes of text (aliases count what they
// repeat, in all three), each refused with
// a ConfigError that names the line, before any further memory or time is spent.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "rules/config_error.h"

namespace floodgate {

// A rules file is a few kilobytes; the cap stops "--config /dev/zero" (or a hostile control
// message) from eating memory. The largest sensible file, 100,000 allow plus 100,000 block
// prefixes, is 3.8 MB.
inline constexpr size_t kMaxDocBytes = 4u << 20;
// No rules file needs more than four levels; deeper is a mistake or an attack.
inline constexpr unsigned kMaxDocDepth = 32;
// Maps, lists and scalars in one document: 200,000 prefixes take 200,000. About 90 bytes each.
inline constexpr size_t kMaxDocNodes = 1u << 20;
// Bytes of scalars and keys in one document, aliases expanded: what the tree holds as text.
inline constexpr size_t kMaxDocTextBytes = 2 * kMaxDocBytes;

struct DocEntry;

struct DocNode {
    enum class Kind : uint8_t { null, scalar, list, map };
    Kind kind = Kind::null;
    int line = 0;                   // 1-based; 0 when the document has no lines (JSON)
    std::string text;               // kind scalar
    std::vector<DocNode> items;     // kind list
    std::vector<DocEntry> entries;  // kind map, in document order (repeated keys kept)
};

struct DocEntry {
    std::string key;
    int line = 0;  // the key's line
    DocNode value;
};

// YAML (one document; YAML 1.1 through libyaml) to a document. Plain "", "~" and "null" are
// null; map keys must be scalars. Throws ConfigError.
DocNode yaml_to_doc(const std::string &text, const std::string &file);

// The JSON form (doc_to_json's), as the control protocol carries it. Throws ConfigError.
DocNode json_to_doc(const nlohmann::json &json, const std::string &file);
nlohmann::ordered_json doc_to_json(const DocNode &doc);

}  // namespace floodgate
