// YAML text to a rules document, through libyaml's event parser (the reference C parser, as
// used by PyYAML). Chosen over yaml-cpp 0.7, which loops forever on a one-byte file holding
// ",", and whose scanner buffers about 235 bytes per token ahead of its parser (4 MB of "["
// took 941 MB and 2.6 s before its own depth guard answered). libyaml looks ahead at most a
// simple key's 1024 characters, and because events are pulled one at a time the builder below
// stops at the first one over a limit: the same 4 MB of "[" is refused in 2 ms and 6 MB, and
// the 3.8 MB file of 200,000 prefixes is read in 0.07 s (yaml-cpp: 0.48 s).
#include <yaml.h>

#include <algorithm>
#include <map>
#include <string_view>

#include "rules/doc.h"

namespace floodgate {

namespace {

// Plain scalars YAML 1.1 reads as null. Quoted ones ("" or 'null') are strings.
bool plain_null(std::string_view s) {
    return s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL";
}

// What a subtree costs: its nodes, and the bytes of its scalars and keys (an alias of a 2 MB
// scalar is one node, but 2 MB more).
struct Size {
    size_t nodes = 0;
    size_t bytes = 0;
};
Size size_of(const DocNode &n) {
    Size total{1, n.text.size()};
    for (const DocNode &item : n.items) {
        const Size s = size_of(item);
        total.nodes += s.nodes;
        total.bytes += s.bytes;
    }
    for (const DocEntry &e : n.entries) {
        const Size s = size_of(e.value);
        total.nodes += s.nodes;
        total.bytes += s.bytes + e.key.size();
    }
    return total;
}

// 1-based line of a byte offset (for reader errors, which have an offset but no mark).
int line_at(const std::string &text, size_t offset) {
    offset = std::min(offset, text.size());
    return 1 + static_cast<int>(std::count(text.begin(), text.begin() + offset, '\n'));
}

class Builder {
  public:
    Builder(const std::string &text, const std::string &file) : text_(text), file_(file) {
        yaml_parser_initialize(&parser_);
        yaml_parser_set_input_string(&parser_, reinterpret_cast<const unsigned char *>(text.data()),
                                     text.size());
    }
    ~Builder() { yaml_parser_delete(&parser_); }
    Builder(const Builder &) = delete;
    Builder &operator=(const Builder &) = delete;

    DocNode build() {
        for (;;) {
            yaml_event_t event;
            if (!yaml_parser_parse(&parser_, &event)) syntax_error();
            struct Deleter {
                yaml_event_t *e;
                ~Deleter() { yaml_event_delete(e); }
            } deleter{&event};
            const int line = static_cast<int>(event.start_mark.line) + 1;
            switch (event.type) {
                case YAML_STREAM_END_EVENT:
                    return std::move(root_);
                case YAML_DOCUMENT_START_EVENT:
                    // A second document would otherwise be ignored without a word.
                    if (++documents_ > 1) fail(line, "more than one YAML document");
                    break;
                case YAML_SCALAR_EVENT: {
                    DocNode n;
                    n.line = line;
                    const char *value = reinterpret_cast<const char *>(event.data.scalar.value);
                    n.text.assign(value, event.data.scalar.length);
                    const bool plain = event.data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
                    n.kind =
                        plain && plain_null(n.text) ? DocNode::Kind::null : DocNode::Kind::scalar;
                    if (n.kind == DocNode::Kind::null) n.text.clear();
                    count(line, {1, n.text.size()});
                    add(std::move(n), 0, anchor(event.data.scalar.anchor));
                    break;
                }
                case YAML_ALIAS_EVENT: {
                    auto it = anchors_.find(anchor(event.data.alias.anchor));
                    if (it == anchors_.end()) fail(line, "alias to an unknown anchor");
                    // What an alias repeats is nested where the alias stands: without this,
                    // each alias of an alias could add 32 more levels, and the tree (and every
                    // recursive walk of it) would go thousands of levels deep.
                    if (stack_.size() + it->second.levels > kMaxDocDepth)
                        fail(line, "nested more than " + std::to_string(kMaxDocDepth) +
                                       " levels deep (counting what the alias repeats)");
                    count(line, size_of(it->second.node));
                    DocNode copy = it->second.node;
                    copy.line = line;
                    add(std::move(copy), it->second.levels, {});
                    break;
                }
                case YAML_SEQUENCE_START_EVENT:
                    open(DocNode::Kind::list, line, anchor(event.data.sequence_start.anchor));
                    break;
                case YAML_MAPPING_START_EVENT:
                    open(DocNode::Kind::map, line, anchor(event.data.mapping_start.anchor));
                    break;
                case YAML_SEQUENCE_END_EVENT:
                case YAML_MAPPING_END_EVENT: {
                    Frame f = std::move(stack_.back());
                    stack_.pop_back();
                    add(std::move(f.node), f.child_levels + 1, f.anchor);
                    break;
                }
                default:  // stream start, document end, no event
                    break;
            }
        }
    }

  private:
    // A map or list being built; a map's key waits in `key` for its value.
    struct Frame {
        DocNode node;
        unsigned child_levels = 0;  // the most maps and lists nested in one of its children
        std::string anchor;
        bool has_key = false;
        std::string key;
        int key_line = 0;
    };

    [[noreturn]] void fail(int line, const std::string &reason) const {
        throw ConfigError(file_, line, "", reason);
    }

    [[noreturn]] void syntax_error() const {
        std::string reason = parser_.problem != nullptr ? parser_.problem : "not valid YAML";
        if (parser_.context != nullptr) reason += std::string(" (") + parser_.context + ")";
        // Reader errors (bad UTF-8, control characters) have an offset rather than a mark.
        const int line = parser_.error == YAML_READER_ERROR
                             ? line_at(text_, parser_.problem_offset)
                             : static_cast<int>(parser_.problem_mark.line) + 1;
        fail(line, reason);
    }

    static std::string anchor(const yaml_char_t *name) {
        return name != nullptr ? reinterpret_cast<const char *>(name) : "";
    }

    void count(int line, Size s) {
        nodes_ += s.nodes;
        bytes_ += s.bytes;
        if (nodes_ > kMaxDocNodes)
            fail(line, "more than " + std::to_string(kMaxDocNodes) +
                           " values (counting what each alias repeats)");
        if (bytes_ > kMaxDocTextBytes)
            fail(line, "more than " + std::to_string(kMaxDocTextBytes) +
                           " bytes of text (counting what each alias repeats)");
    }

    void open(DocNode::Kind kind, int line, std::string anchor_name) {
        if (stack_.size() >= kMaxDocDepth)
            fail(line, "nested more than " + std::to_string(kMaxDocDepth) + " levels deep");
        count(line, {1, 0});
        Frame f;
        f.node.kind = kind;
        f.node.line = line;
        f.anchor = std::move(anchor_name);
        stack_.push_back(std::move(f));
    }

    // levels: how many maps and lists node is, nested (0 for a scalar).
    void add(DocNode node, unsigned levels, const std::string &anchor_name) {
        if (!anchor_name.empty()) {
            // An anchor keeps a copy for its aliases; the copy counts against the budget too.
            count(node.line, size_of(node));
            anchors_[anchor_name] = Anchor{node, levels};
        }
        if (stack_.empty()) {
            root_ = std::move(node);
            return;
        }
        Frame &top = stack_.back();
        top.child_levels = std::max(top.child_levels, levels);
        if (top.node.kind == DocNode::Kind::list) {
            top.node.items.push_back(std::move(node));
        } else if (!top.has_key) {
            if (node.kind == DocNode::Kind::list || node.kind == DocNode::Kind::map)
                fail(node.line, "field names must be plain words");
            top.has_key = true;
            top.key = std::move(node.text);
            top.key_line = node.line;
        } else {
            top.has_key = false;
            top.node.entries.push_back(DocEntry{std::move(top.key), top.key_line, std::move(node)});
        }
    }

    const std::string &text_;
    const std::string &file_;
    yaml_parser_t parser_;
    std::vector<Frame> stack_;
    struct Anchor {
        DocNode node;
        unsigned levels = 0;
    };
    std::map<std::string, Anchor> anchors_;
    DocNode root_;
    size_t nodes_ = 0;
    size_t bytes_ = 0;
    int documents_ = 0;
};

}  // namespace

DocNode yaml_to_doc(const std::string &text, const std::string &file) {
    if (text.size() > kMaxDocBytes)
        throw ConfigError(file, 0, "", "larger than " + std::to_string(kMaxDocBytes) + " bytes");
    return Builder(text, file).build();
}

}  // namespace floodgate
