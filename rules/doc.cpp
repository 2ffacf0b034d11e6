#include "rules/doc.h"

#include "dataplane/api/control_protocol.h"

namespace floodgate {

static_assert(kMaxMessageValues >= kMaxDocNodes + 65536,
              "a control message or reply must hold the largest valid rules document");

namespace {

std::string error_text(const std::string &file, int line, const std::string &field,
                       const std::string &reason) {
    std::string text = file;
    if (line > 0) {
        text += ':';
        text += std::to_string(line);
    }
    text += ": ";
    // Errors about the file as a whole (unreadable, YAML syntax) have no field.
    if (!field.empty()) {
        text += field;
        text += ": ";
    }
    text += reason;
    return text;
}

struct JsonBuilder {
    const std::string &file;
    size_t nodes = 0;
    size_t bytes = 0;

    void text(size_t n) {
        if ((bytes += n) > kMaxDocTextBytes)
            throw ConfigError(file, 0, "",
                              "more than " + std::to_string(kMaxDocTextBytes) + " bytes of text");
    }

    DocNode build(const nlohmann::json &j, unsigned depth) {
        if (++nodes > kMaxDocNodes)
            throw ConfigError(file, 0, "", "more than " + std::to_string(kMaxDocNodes) + " values");
        DocNode n;
        if (j.is_object() || j.is_array()) {
            if (depth >= kMaxDocDepth)
                throw ConfigError(
                    file, 0, "",
                    "nested more than " + std::to_string(kMaxDocDepth) + " levels deep");
            if (j.is_object()) {
                n.kind = DocNode::Kind::map;
                for (const auto &[key, value] : j.items()) {
                    text(key.size());
                    n.entries.push_back(DocEntry{key, 0, build(value, depth + 1)});
                }
            } else {
                n.kind = DocNode::Kind::list;
                for (const nlohmann::json &item : j) n.items.push_back(build(item, depth + 1));
            }
        } else if (j.is_string()) {
            n.kind = DocNode::Kind::scalar;
            n.text = j.get<std::string>();
            text(n.text.size());
        } else if (!j.is_null()) {  // numbers and booleans, as YAML would have spelled them
            n.kind = DocNode::Kind::scalar;
            n.text = j.dump();
            text(n.text.size());
        }
        return n;
    }
};

}  // namespace

ConfigError::ConfigError(std::string file, int line, std::string field, const std::string &reason)
    : std::runtime_error(error_text(file, line, field, reason)),
      file_(std::move(file)),
      line_(line),
      field_(std::move(field)) {}

DocNode json_to_doc(const nlohmann::json &json, const std::string &file) {
    return JsonBuilder{file}.build(json, 0);
}

nlohmann::ordered_json doc_to_json(const DocNode &doc) {
    switch (doc.kind) {
        case DocNode::Kind::scalar:
            return doc.text;
        case DocNode::Kind::list: {
            nlohmann::ordered_json a = nlohmann::ordered_json::array();
            for (const DocNode &item : doc.items) a.push_back(doc_to_json(item));
            return a;
        }
        case DocNode::Kind::map: {
            nlohmann::ordered_json o = nlohmann::ordered_json::object();
            for (const DocEntry &e : doc.entries) o[e.key] = doc_to_json(e.value);
            return o;
        }
        case DocNode::Kind::null:
        default:
            return nullptr;
    }
}

}  // namespace floodgate
