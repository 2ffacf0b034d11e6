// A rule's key (per source, per destination, both, or none) and, for an aggregate key, the
// share of its burst each trust class keeps in reserve (rules/config_parser.h).
#include "rules/config_parser.h"

namespace floodgate::validation {

namespace {

constexpr std::pair<std::string_view, KeyKind> kKeyKinds[] = {
    {"src", KeyKind::src}, {"dst", KeyKind::dst}, {"none", KeyKind::none}};

}  // namespace

// A prefix length pair { ipv4, ipv6 } into *v4 and *v6 (each kept when absent).
void ConfigParser::key_lengths(const Field &field, uint8_t *v4, uint8_t *v6) const {
    if (field.node->kind == DocNode::Kind::null) return;  // "dst:" alone: the defaults
    const Fields f = fields(field, {"ipv4", "ipv6"});
    if (const Field *a = f.find("ipv4")) *v4 = static_cast<uint8_t>(integer(*a, 0, 32));
    if (const Field *a = f.find("ipv6")) *v6 = static_cast<uint8_t>(integer(*a, 0, 128));
}

// steering: { ipv4, ipv6 }: the source prefix that decides a packet's worker. Not 0: one
// worker would own every source.
SteeringOptions ConfigParser::steering(const Field &field) const {
    SteeringOptions s;
    s.set = true;
    const Fields f = fields(field, {"ipv4", "ipv6"});
    if (const Field *a = f.find("ipv4")) s.ipv4_len = static_cast<uint8_t>(integer(*a, 1, 32));
    if (const Field *a = f.find("ipv6")) s.ipv6_len = static_cast<uint8_t>(integer(*a, 1, 128));
    return s;
}

// key: { ipv4, ipv6 } (the source, as before), { src: {...} }, { dst: {...} }, both, or
// the words src, dst and none.
void ConfigParser::key(const Field &field, Rule *r) const {
    if (field.node->kind == DocNode::Kind::scalar) {
        r->key_kind = choice(field, kKeyKinds);
        return;
    }
    const Fields f = fields(field, {"ipv4", "ipv6", "src", "dst"});
    const Field *src = f.find("src");
    const Field *dst = f.find("dst");
    if ((f.find("ipv4") != nullptr || f.find("ipv6") != nullptr) &&
        (src != nullptr || dst != nullptr))
        fail(field, "write the source's lengths under key.src when key.dst is there");
    if (dst == nullptr) {
        key_lengths(src != nullptr ? *src : field, &r->key_ipv4_len, &r->key_ipv6_len);
        return;
    }
    r->key_kind = src != nullptr ? KeyKind::src_dst : KeyKind::dst;
    if (src != nullptr) key_lengths(*src, &r->key_ipv4_len, &r->key_ipv6_len);
    key_lengths(*dst, &r->dst_key_ipv4_len, &r->dst_key_ipv6_len);
}

// "30%": a whole percentage.
uint8_t ConfigParser::percent(const Field &field) const {
    const std::string &text = scalar(field);
    if (text.empty() || text.back() != '%')
        fail(field, "'" + text + "' is not a percentage (write it as 30%)");
    return static_cast<uint8_t>(
        integer_text(field, std::string_view(text).substr(0, text.size() - 1), 0, 100));
}

// reserve: { established, verified, known }: what is left of the burst is the new sources'.
// Every class must keep at least one packet of burst, or it could never pass.
void ConfigParser::reserve(const Field &field, Rule *r) const {
    if (!is_aggregate(r->key_kind))
        fail(field,
             "reserve needs an aggregate key (key: { dst: ... } or key: none): "
             "every packet of a per-source key has the same source");
    const Fields f = fields(field, {"established", "verified", "known"});
    ClassReserve c{0, 0, 0};
    if (const Field *a = f.find("established")) c.established = percent(*a);
    if (const Field *a = f.find("verified")) c.verified = percent(*a);
    if (const Field *a = f.find("known")) c.known = percent(*a);
    if (c.total() > kMaxReserveTotal)
        fail(field, "the reserves add up to " + std::to_string(c.total()) + "%, over " +
                        std::to_string(kMaxReserveTotal) + "% (new sources keep the rest)");
    r->reserve = c;
}

// The least trusted class's share of an aggregate rule's burst must be a packet at least.
void ConfigParser::check_reserve(const Field &at, const Rule &r) const {
    if (!is_aggregate(r.key_kind)) return;
    const bool window =
        r.algorithm == RuleAlgorithm::fixed_window || r.algorithm == RuleAlgorithm::sliding_window;
    const uint64_t whole = window ? r.rate_count : r.burst_pkts;
    if (whole * (100 - r.reserve.total()) < 100)
        fail(at, std::string(window ? "a window of " : "burst ") + std::to_string(whole) +
                     " leaves new sources less than one packet after the classes' reserve of " +
                     std::to_string(r.reserve.total()) +
                     "% (raise the burst, or set reserve: lower)");
}

}  // namespace floodgate::validation
