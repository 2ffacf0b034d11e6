// Reading gobgp's JSON RIB (control/upstream/flowspec.h says its shape): every type checked,
// since it is outside input.
#include "control/upstream/flowspec.h"

#include <exception>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace floodgate {

using nlohmann::json;

namespace {

constexpr uint64_t kBlackhole = 0xffff029a;  // 65535:666 (RFC 7999)
constexpr uint64_t kCommunitiesAttr = 8;

// RFC 8955 section 4.2.1.1: a numeric operator byte without its end-of-list and length bits
// (the reserved bit is kept: set, the path is not one of ours).
constexpr unsigned kOpMask = 0x4f;  // and, reserved, lt, gt, eq
constexpr unsigned kOpEq = 0x01, kOpGe = 0x03, kOpAndLe = 0x45;

const json *member(const json &o, const char *name) {
    if (!o.is_object()) return nullptr;
    const auto it = o.find(name);
    return it == o.end() ? nullptr : &*it;
}

std::optional<uint64_t> number(const json *v) {
    if (v == nullptr || !v->is_number_unsigned()) return std::nullopt;
    return v->get<uint64_t>();
}

// {"prefix": "198.18.66.6/32"}, of the family read.
std::optional<Prefix> prefix_of(const json *v, uint8_t family) {
    const json *text = v == nullptr ? nullptr : member(*v, "prefix");
    if (text == nullptr || !text->is_string()) return std::nullopt;
    std::string why;
    std::optional<Prefix> p = parse_prefix(text->get<std::string>(), &why);
    if (!p || p->family != family) return std::nullopt;
    return p;
}

struct Op {
    unsigned op;  // masked with kOpMask
    uint64_t value;
};

// A numeric component's operators, [{"op": 129, "value": 17}], at most the two ours use.
bool ops_of(const json *v, std::vector<Op> *out) {
    if (v == nullptr || !v->is_array() || v->empty() || v->size() > 2) return false;
    for (const json &item : *v) {
        const std::optional<uint64_t> op = number(member(item, "op"));
        const std::optional<uint64_t> value = number(member(item, "value"));
        if (!op || !value || *op > 0xff) return false;
        out->push_back({static_cast<unsigned>(*op) & kOpMask, *value});
    }
    return true;
}

// A flowspec path's NLRI as one of our rules: a source, and a destination, a protocol and a
// destination port written as flowspec_words writes them; any other component, operator or
// offset makes it foreign (the same words would not remove it).
std::optional<FlowspecRule> read_flowspec(const json &nlri, uint8_t family) {
    const json *components = member(nlri, "value");
    if (components == nullptr || !components->is_array()) return std::nullopt;
    FlowspecRule r;
    bool seen[6] = {};
    for (const json &c : *components) {
        const std::optional<uint64_t> type = number(member(c, "type"));
        if (!type || *type >= 6 || seen[*type]) return std::nullopt;
        seen[*type] = true;
        if (const json *offset = member(c, "offset"); offset && number(offset) != 0u)
            return std::nullopt;
        const json *value = member(c, "value");
        std::vector<Op> ops;
        if (*type == 1 || *type == 2) {
            const std::optional<Prefix> p = prefix_of(value, family);
            if (!p) return std::nullopt;
            if (*type == 1)
                r.destination = *p;
            else
                r.source = *p;
        } else if (*type == 3) {
            if (!ops_of(value, &ops) || ops.size() != 1 || ops[0].op != kOpEq || ops[0].value > 255)
                return std::nullopt;
            r.protocol = static_cast<uint8_t>(ops[0].value);
        } else if (*type == 5) {
            if (!ops_of(value, &ops)) return std::nullopt;
            const uint64_t lo = ops[0].value, hi = ops.back().value;
            const bool one = ops.size() == 1 && ops[0].op == kOpEq;
            const bool range = ops.size() == 2 && ops[0].op == kOpGe && ops[1].op == kOpAndLe;
            if (!(one || range) || hi > 65535 || (range && lo >= hi)) return std::nullopt;
            r.destination_port = PortRange{static_cast<uint16_t>(lo), static_cast<uint16_t>(hi)};
        } else {
            return std::nullopt;  // 4 (port, either direction): never written by us
        }
    }
    if (!seen[2]) return std::nullopt;
    return r;
}

bool has_blackhole(const json *attrs) {
    if (attrs == nullptr || !attrs->is_array()) return false;
    for (const json &a : *attrs) {
        if (number(member(a, "type")) != kCommunitiesAttr) continue;
        const json *list = member(a, "communities");
        if (list == nullptr || !list->is_array()) continue;
        for (const json &c : *list)
            if (number(&c) == kBlackhole) return true;
    }
    return false;
}

}  // namespace

bool parse_rib(std::string_view text, RibFamily family, RibRead *out, std::string *error) {
    *out = {};
    try {
        // Values nested deeper than the limit are dropped as they are read, so that input
        // of any shape costs memory in proportion to its size and no more.
        bool too_deep = false;
        const json::parser_callback_t guard = [&too_deep](int depth, json::parse_event_t, json &) {
            too_deep = too_deep || depth > kMaxJsonDepth;
            return !too_deep;
        };
        const json rib = json::parse(text.begin(), text.end(), guard, false);
        if (too_deep) {
            *error = "nested deeper than " + std::to_string(kMaxJsonDepth);
            return false;
        }
        if (rib.is_discarded() || !rib.is_object()) {
            *error = "not a JSON object";
            return false;
        }
        const uint8_t ip = family == RibFamily::flowspec4 || family == RibFamily::unicast4 ? 4 : 6;
        const bool flowspec = family == RibFamily::flowspec4 || family == RibFamily::flowspec6;
        for (const auto &[route, paths] : rib.items()) {
            if (!paths.is_array()) {
                *error = "'" + route.substr(0, 100) + "' is not a list of paths";
                return false;
            }
            for (const json &path : paths) {
                if (member(path, "neighbor-ip") != nullptr) continue;  // from a peer
                const json *nlri = member(path, "nlri");
                if (flowspec) {
                    std::optional<FlowspecRule> r =
                        nlri == nullptr ? std::nullopt : read_flowspec(*nlri, ip);
                    if (r)
                        out->rules.push_back(std::move(*r));
                    else
                        ++out->foreign;
                } else if (has_blackhole(member(path, "attrs"))) {
                    const std::optional<Prefix> p = prefix_of(nlri, ip);
                    if (p)
                        out->blackholes.push_back(*p);
                    else
                        ++out->foreign;
                }
            }
        }
        return true;
    } catch (const std::exception &e) {
        *error = e.what();
        return false;
    }
}

}  // namespace floodgate
