// What a rules document means: every field checked against the format, with the path and line
// of the node that is wrong. The document comes from YAML (a file) or JSON (a control message);
// this file does not know which.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <initializer_list>
#include <string_view>
#include <tuple>
#include <utility>

#include "dataplane/api/numbers.h"
#include "dataplane/api/protocols.h"
#include "dataplane/patterns/payload_database.h"
#include "rules/load.h"
#include "rules/payload_text.h"

namespace floodgate {

namespace {

// burst * interval is the GCRA tolerance that the limiter adds to 64-bit timestamps; keeping
// it below 2^62 ns leaves headroom for that sum (a day's interval times 2^20 is past it).
constexpr uint64_t kMaxBurstWindowNs = 1ull << 62;

// TCP header flag bits, RFC 9293 section 3.1 and RFC 3168 (ECE, CWR).
constexpr std::pair<std::string_view, uint8_t> kTcpFlags[] = {
    {"fin", kTcpFin}, {"syn", kTcpSyn}, {"rst", kTcpRst}, {"psh", kTcpPsh},
    {"ack", kTcpAck}, {"urg", kTcpUrg}, {"ece", kTcpEce}, {"cwr", kTcpCwr},
};

constexpr std::pair<std::string_view, uint8_t> kProtoNames[] = {
    {"tcp", kProtoTcp},
    {"udp", kProtoUdp},
    {"icmp", kProtoIcmp},
    {"icmpv6", kProtoIcmpv6},
};

constexpr std::pair<std::string_view, RuleAction> kActions[] = {
    {"drop", RuleAction::drop},
    {"syn-auth", RuleAction::syn_auth},
    {"dns-truncate", RuleAction::dns_truncate},
    {"tcp-rst", RuleAction::tcp_rst},
    {"icmp-unreachable", RuleAction::icmp_unreachable},
};
constexpr std::pair<std::string_view, KeyKind> kKeyKinds[] = {
    {"src", KeyKind::src}, {"dst", KeyKind::dst}, {"none", KeyKind::none}};
constexpr std::pair<std::string_view, bool> kBooleans[] = {{"true", true}, {"false", false}};
constexpr std::pair<std::string_view, RuleMode> kModes[] = {
    {"enforce", RuleMode::enforce},
    {"shadow", RuleMode::shadow},
};
constexpr std::pair<std::string_view, RuleAlgorithm> kAlgorithms[] = {
    {"gcra", RuleAlgorithm::gcra},
    {"fixed-window", RuleAlgorithm::fixed_window},
    {"sliding-window", RuleAlgorithm::sliding_window},
    {"token-bucket", RuleAlgorithm::token_bucket},
};
constexpr std::pair<std::string_view, TableFullPolicy> kTableFull[] = {
    {"shared", TableFullPolicy::shared},
    {"pass", TableFullPolicy::pass},
    {"drop", TableFullPolicy::drop},
};

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

std::string_view name_of(std::string_view name) {
    return name;
}
std::string_view name_of(const RateUnit &unit) {
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

const DocNode kNull;

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

auto prefix_order(const Prefix &p) {
    return std::tie(p.family, p.len, p.addr);
}

// Parses and validates one document. Every check throws ConfigError at the first problem, with
// the path and line of the node that caused it.
class ConfigParser {
  public:
    ConfigParser(const std::string &file, const PrecompiledPayloads *precompiled)
        : file_(file), precompiled_(precompiled) {}

    Config parse(const DocNode &root) {
        Config cfg;
        cfg.path = file_;
        const Field top{&root, "", root.line};
        // An empty file (or one with only comments) is a valid config with the defaults.
        if (root.kind == DocNode::Kind::null) return cfg;
        if (root.kind != DocNode::Kind::map)
            fail(top, std::string("the top level must be a map, found ") + describe(root));
        const Fields f =
            fields(top, {"allow", "block", "table", "answers", "established", "rules"});

        std::vector<Field> allow_items;
        std::vector<Field> block_items;
        if (const Field *allow = f.find("allow")) allow_items = items(*allow, true);
        if (const Field *block = f.find("block")) block_items = items(*block, true);
        for (const Field &item : allow_items) cfg.allow.push_back(prefix(item));
        for (const Field &item : block_items) cfg.block.push_back(prefix(item));
        refuse_in_both(cfg, allow_items, block_items);

        if (const Field *table = f.find("table")) {
            const Fields t = fields(*table, {"entries_per_core"});
            if (const Field *entries = t.find("entries_per_core"))
                cfg.table_entries_per_core = integer(*entries, 1, kMaxTableEntriesPerCore);
        }

        if (const Field *answers = f.find("answers")) cfg.answers = answer_caps(*answers);
        if (const Field *e = f.find("established")) cfg.established = established(*e);

        if (const Field *rules = f.find("rules")) {
            const std::vector<Field> rule_items = items(*rules, true);
            if (rule_items.size() > kMaxRules) {
                fail(rule_items[kMaxRules],
                     "too many rules (at most " + std::to_string(kMaxRules) + ")");
            }
            for (const Field &item : rule_items) {
                rule_index_ = cfg.rules.size();
                cfg.rules.push_back(rule(item, cfg.rules));
            }
        }
        return cfg;
    }

  private:
    [[noreturn]] void fail(const Field &at, const std::string &reason) const {
        throw ConfigError(file_, at.line, at.path, reason);
    }

    // Listing a prefix in both says two opposite things; refuse rather than pick one. Sorted
    // lookups: 100,000 of each take milliseconds (a pairwise check took 106 s).
    void refuse_in_both(const Config &cfg, const std::vector<Field> &allow_items,
                        const std::vector<Field> &block_items) const {
        std::vector<size_t> allow_order(cfg.allow.size());
        for (size_t i = 0; i < allow_order.size(); ++i) allow_order[i] = i;
        auto less = [&](size_t a, size_t b) {
            return prefix_order(cfg.allow[a]) < prefix_order(cfg.allow[b]);
        };
        std::sort(allow_order.begin(), allow_order.end(), less);
        for (size_t b = 0; b < cfg.block.size(); ++b) {
            auto it = std::lower_bound(
                allow_order.begin(), allow_order.end(), b, [&](size_t a, size_t block) {
                    return prefix_order(cfg.allow[a]) < prefix_order(cfg.block[block]);
                });
            if (it != allow_order.end() && cfg.allow[*it] == cfg.block[b]) {
                const Field &other = allow_items[*it];
                fail(block_items[b],
                     format_prefix(cfg.block[b]) + " is also in " + other.path +
                         (other.line > 0 ? " (line " + std::to_string(other.line) + ")" : ""));
            }
        }
    }

    // Path and line of a field that is absent, reported at the map that should hold it.
    static Field child(const Field &map, std::string_view name) {
        const std::string path =
            map.path.empty() ? std::string(name) : map.path + "." + std::string(name);
        return Field{&kNull, path, map.line};
    }

    Fields fields(const Field &map, std::initializer_list<std::string_view> allowed) const {
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

    const Field &require(const Fields &f, std::string_view name) const {
        const Field *field = f.find(name);
        if (field == nullptr) fail(child(f.self, name), "missing required field");
        return *field;
    }

    // Elements of a list. When null_is_empty, an empty value counts as an empty list, so that
    // "rules:" with every entry commented out still loads.
    std::vector<Field> items(const Field &list, bool null_is_empty) const {
        std::vector<Field> out;
        if (null_is_empty && list.node->kind == DocNode::Kind::null) return out;
        if (list.node->kind != DocNode::Kind::list)
            fail(list, std::string("list expected, found ") + describe(*list.node));
        out.reserve(list.node->items.size());
        size_t i = 0;
        for (const DocNode &node : list.node->items) {
            const int line =
                node.kind == DocNode::Kind::null || node.line == 0 ? list.line : node.line;
            out.push_back(Field{&node, list.path + "[" + std::to_string(i) + "]", line});
            ++i;
        }
        return out;
    }

    // A value that may be written alone or as a list: "53" or "[53, 80]". An empty list is
    // refused because in RuleMatch it would mean "any", the opposite of what it looks like.
    std::vector<Field> one_or_more(const Field &field) const {
        if (field.node->kind != DocNode::Kind::list) return {field};
        std::vector<Field> out = items(field, false);
        if (out.empty()) fail(field, "empty list (leave the field out to match any)");
        return out;
    }

    const std::string &scalar(const Field &field) const {
        if (field.node->kind != DocNode::Kind::scalar)
            fail(field, std::string("scalar expected, found ") + describe(*field.node));
        return field.node->text;
    }

    // A decimal integer in [lo, hi]: digits only, so that what is accepted is exactly what
    // the operator wrote.
    uint64_t integer(const Field &field, uint64_t lo, uint64_t hi) const {
        return integer_text(field, scalar(field), lo, hi);
    }

    uint64_t integer_text(const Field &field, std::string_view text, uint64_t lo,
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

    template <typename T, size_t N>
    T choice(const Field &field, const std::pair<std::string_view, T> (&options)[N]) const {
        const std::string &text = scalar(field);
        for (const auto &[name, value] : options)
            if (name == text) return value;
        fail(field, "unknown value '" + text + "' (expected one of: " + join_names(options) + ")");
    }

    Prefix prefix(const Field &field) const {
        std::string why;
        std::optional<Prefix> p = parse_prefix(scalar(field), &why);
        if (!p) fail(field, why);
        return *p;
    }

    // "53" or "1000-2000", both ends inclusive.
    PortRange port_range(const Field &field) const {
        const std::string &text = scalar(field);
        const size_t dash = text.find('-', 1);  // from 1, so "-5" reads as a bad number
        if (dash == std::string::npos) {
            const auto port = static_cast<uint16_t>(integer_text(field, text, 0, 65535));
            return PortRange{port, port};
        }
        const std::string_view view = text;
        const auto lo = static_cast<uint16_t>(integer_text(field, view.substr(0, dash), 0, 65535));
        const auto hi = static_cast<uint16_t>(integer_text(field, view.substr(dash + 1), 0, 65535));
        if (lo > hi) fail(field, "port range '" + text + "' ends below its start");
        return PortRange{lo, hi};
    }

    // A rule's port list is scanned for every packet it could match: it is kept short.
    std::vector<PortRange> ports(const Field &field) const {
        std::vector<PortRange> out;
        for (const Field &item : one_or_more(field)) {
            if (out.size() == kMaxPortRanges)
                fail(item, "more than " + std::to_string(kMaxPortRanges) +
                               " ports or ranges (write ranges: 1000-2000)");
            out.push_back(port_range(item));
        }
        return out;
    }

    std::vector<Prefix> prefixes(const Field &field) const {
        std::vector<Prefix> out;
        for (const Field &item : one_or_more(field)) out.push_back(prefix(item));
        return out;
    }

    uint8_t proto(const Field &field) const {
        const std::string &text = scalar(field);
        for (const auto &[name, number] : kProtoNames)
            if (name == text) return number;
        if (!text.empty() && text[0] >= '0' && text[0] <= '9')
            return static_cast<uint8_t>(integer(field, 0, 255));
        fail(field, "unknown protocol '" + text + "' (expected " + join_names(kProtoNames) +
                        " or a number 0-255)");
    }

    // "syn !ack": names separated by spaces or commas; "!" means the flag must be clear.
    TcpFlagMatch tcp_flags(const Field &field) const {
        const std::string &text = scalar(field);
        TcpFlagMatch m;
        size_t pos = 0;
        bool any = false;
        while (pos < text.size()) {
            const size_t end = text.find_first_of(" ,", pos);
            std::string_view word = std::string_view(text).substr(pos, end - pos);
            pos = end == std::string::npos ? text.size() : end + 1;
            if (word.empty()) continue;
            const bool clear = word[0] == '!';
            if (clear) word.remove_prefix(1);
            uint8_t bit = 0;
            for (const auto &[name, flag] : kTcpFlags)
                if (name == word) bit = flag;
            if (bit == 0) {
                fail(field, "unknown TCP flag '" + std::string(word) + "' (expected " +
                                join_names(kTcpFlags) + ", each optionally prefixed with '!')");
            }
            (clear ? m.must_clear : m.must_set) |= bit;
            any = true;
        }
        if (!any) fail(field, "no TCP flags given");
        if ((m.must_set & m.must_clear) != 0)
            fail(field, "a flag is both required and excluded ('x' and '!x')");
        return m;
    }

    RuleMatch match(const Field &field) const {
        const Fields f =
            fields(field, {"proto", "dst_port", "src_port", "src", "dst", "tcp_flags", "payload"});
        RuleMatch m;
        if (const Field *p = f.find("proto")) m.proto = proto(*p);
        const Field *dst_port = f.find("dst_port");
        const Field *src_port = f.find("src_port");
        if (dst_port != nullptr) m.dst_ports = ports(*dst_port);
        if (src_port != nullptr) m.src_ports = ports(*src_port);
        if (const Field *src = f.find("src")) m.src = prefixes(*src);
        if (const Field *dst = f.find("dst")) m.dst = prefixes(*dst);
        const Field *flags = f.find("tcp_flags");
        if (flags != nullptr) m.tcp_flags = tcp_flags(*flags);

        // Ports exist only in TCP and UDP headers; a port condition with another protocol
        // could never match, which is surely not what the operator meant.
        const Field *any_port = dst_port != nullptr ? dst_port : src_port;
        if (any_port != nullptr && m.proto && *m.proto != kProtoTcp && *m.proto != kProtoUdp) {
            fail(*any_port,
                 "ports need proto tcp or udp (proto is " + std::to_string(*m.proto) + ")");
        }
        if (flags != nullptr) {
            if (m.proto && *m.proto != kProtoTcp)
                fail(*flags,
                     "tcp_flags needs proto tcp (proto is " + std::to_string(*m.proto) + ")");
            m.proto = kProtoTcp;
        }
        if (const Field *p = f.find("payload")) {
            // Only these have an L4 header the parser reads, hence a payload it can find.
            if (m.proto && *m.proto != kProtoTcp && *m.proto != kProtoUdp &&
                *m.proto != kProtoIcmp && *m.proto != kProtoIcmpv6)
                fail(*p, "payload needs proto tcp, udp, icmp or icmpv6 (proto is " +
                             std::to_string(*m.proto) + ")");
            m.payload = payload(*p);
        }
        return m;
    }

    // payload: { patterns: [...], offset, depth }; each pattern a literal ('GET / HTTP/1.1',
    // '\x00\x01'), { regex: ..., caseless: true }, { literal: ..., caseless: true } or
    // { dns_suffix: victim.example }. Compiled here, so that a bad one is refused with its index.
    PayloadMatch payload(const Field &field) const {
        const Fields f = fields(field, {"patterns", "offset", "depth"});
        PayloadMatch m;
        const Field &list = require(f, "patterns");
        const std::vector<Field> items_ = one_or_more(list);
        if (items_.size() > kMaxPayloadPatterns)
            fail(list, std::to_string(items_.size()) + " patterns, over " +
                           std::to_string(kMaxPayloadPatterns));
        for (const Field &item : items_) m.patterns.push_back(pattern(item));
        if (const Field *o = f.find("offset"))
            m.offset = static_cast<uint32_t>(integer(*o, 0, kMaxPayloadWindow));
        if (const Field *d = f.find("depth"))
            m.depth = static_cast<uint32_t>(integer(*d, 1, kMaxPayloadWindow));
        // Compiled by the control plane already (a load request carries it): not again.
        if (precompiled_ != nullptr) {
            auto it = precompiled_->find(rule_index_);
            if (it != precompiled_->end() && it->second.database &&
                it->second.fingerprint == payload_fingerprint(m.patterns)) {
                m.compiled = it->second.database;
                return m;
            }
        }
        std::string error;
        int bad = -1;
        m.compiled = PayloadDatabase::compile(m.patterns, &error, &bad);
        if (!m.compiled) {
            if (bad >= 0 && static_cast<size_t>(bad) < items_.size())
                fail(items_[static_cast<size_t>(bad)],
                     "pattern " + std::to_string(bad) + ": " + error);
            fail(list, error);
        }
        return m;
    }

    PayloadPattern pattern(const Field &field) const {
        PayloadPattern p;
        std::string why;
        const auto literal = [&](const Field &text) {
            p.kind = PayloadPattern::Kind::literal;
            if (!parse_literal(scalar(text), &p.text, &why)) fail(text, why);
            if (p.text.size() > kMaxPayloadPatternBytes)
                fail(text, "longer than " + std::to_string(kMaxPayloadPatternBytes) + " bytes");
        };
        if (field.node->kind == DocNode::Kind::scalar) {
            literal(field);
            return p;
        }
        const Fields f = fields(field, {"literal", "regex", "dns_suffix", "caseless"});
        const Field *lit = f.find("literal"), *re = f.find("regex"), *dns = f.find("dns_suffix");
        if ((lit != nullptr) + (re != nullptr) + (dns != nullptr) != 1)
            fail(field, "one of literal, regex or dns_suffix");
        if (lit != nullptr) literal(*lit);
        if (re != nullptr) {
            p.kind = PayloadPattern::Kind::regex;
            p.text = scalar(*re);
            if (p.text.empty() || p.text.size() > kMaxPayloadPatternBytes)
                fail(*re, "a regular expression of 1-" + std::to_string(kMaxPayloadPatternBytes) +
                              " bytes");
            for (unsigned char c : p.text)
                if (c < 0x20 || c == 0x7f)
                    fail(*re, "a control byte in a regular expression (write \\xHH)");
        }
        if (dns != nullptr) {
            p.kind = PayloadPattern::Kind::dns_suffix;
            p.text = scalar(*dns);
            std::string labels;
            if (!dns_labels(p.text, &labels, &why)) fail(*dns, why);
        }
        if (const Field *c = f.find("caseless")) {
            if (dns != nullptr) fail(*c, "a dns_suffix is always caseless (as DNS names are)");
            p.caseless = choice(*c, kBooleans);
        }
        return p;
    }

    // "10/s", "30/min", "1/h", "3/10m", "10000/d": a count, then a period as an optional
    // multiplier and a unit.
    void rate(const Field &field, uint64_t *count_out, uint64_t *period_out) const {
        const std::string &text = scalar(field);
        const size_t slash = text.find('/');
        if (slash == std::string::npos)
            fail(field, "'" + text + "' has no unit (write N/s, N/min, N/h or N/d)");
        const std::string_view view = text;
        const std::string_view count_text = view.substr(0, slash);
        std::string_view unit = view.substr(slash + 1);
        uint64_t count = 0;
        auto [end, ec] =
            std::from_chars(count_text.data(), count_text.data() + count_text.size(), count);
        if (count_text.empty() || end != count_text.data() + count_text.size() ||
            ec != std::errc() || count == 0)
            fail(field, "'" + text + "': the count must be a whole number of packets >= 1");
        const size_t digits = std::min(unit.find_first_not_of("0123456789"), unit.size());
        uint64_t multiplier = 1;
        if (digits > 0) {
            auto [m_end, m_ec] = std::from_chars(unit.data(), unit.data() + digits, multiplier);
            if (m_ec != std::errc() || multiplier == 0 || multiplier > kMaxRatePeriodNs)
                fail(field, "'" + text + "': the period's multiplier must be a whole number >= 1");
            unit.remove_prefix(digits);
        }
        uint64_t unit_ns = 0;
        for (const RateUnit &u : kRateUnits)
            if (u.name == unit) unit_ns = u.period_ns;
        if (unit_ns == 0) {
            fail(field, "'" + text + "': unknown unit '" + std::string(unit) + "' (expected " +
                            join_names(kRateUnits) + ")");
        }
        if (multiplier > kMaxRatePeriodNs / unit_ns)
            fail(field, "'" + text + "': the period is longer than 366 days");
        const uint64_t period_ns = multiplier * unit_ns;
        // The limiter counts whole nanoseconds between packets.
        if (count > period_ns)
            fail(field, "'" + text + "' is faster than one packet per nanosecond");
        *count_out = count;
        *period_out = period_ns;
    }

    // { rate, burst }, and for answers' caps the prefix fields named in extra.
    RateLimit rate_limit(const Field &field, const Fields &f) const {
        RateLimit l;
        rate(require(f, "rate"), &l.count, &l.period_ns);
        l.burst = static_cast<uint32_t>(integer(require(f, "burst"), 1, kMaxBurstPkts));
        if (l.interval_ns() > kMaxBurstWindowNs / l.burst)
            fail(field, "burst * interval exceeds 2^62 ns; lower the burst or raise the rate");
        return l;
    }

    void limit(const Field &field, Rule *r) const {
        const Fields f = fields(field, {"rate", "burst"});
        if (!is_window(r->algorithm)) {  // gcra, token-bucket: a rate and a burst
            const RateLimit l = rate_limit(field, f);
            r->rate_count = l.count;
            r->rate_period_ns = l.period_ns;
            r->burst_pkts = l.burst;
            return;
        }
        // A window: the rate's count is the window's limit N, its period the window W.
        const char *algorithm = rule_algorithm_name(r->algorithm);
        if (const Field *burst = f.find("burst"))
            fail(*burst, std::string("burst does not apply to ") + algorithm +
                             " (the rate's count is what one window admits)");
        const Field &rate_field = require(f, "rate");
        uint64_t n = 0, w_ns = 0;
        rate(rate_field, &n, &w_ns);
        const std::string &text = scalar(rate_field);
        if (w_ns < kMinWindowNs) fail(rate_field, "'" + text + "': a window must be >= 1 ms");
        if (n > kMaxWindowPkts)
            fail(rate_field, "'" + text + "': a window admits at most " +
                                 std::to_string(kMaxWindowPkts) + " packets");
        // The encodings of window.h: a fixed window's count must be below W in ns, a sliding
        // window's two counts (N + 1)^2 at most W.
        if (r->algorithm == RuleAlgorithm::fixed_window && n >= w_ns)
            fail(rate_field, "'" + text +
                                 "': a fixed window admits fewer packets than its "
                                 "length in ns");
        if (r->algorithm == RuleAlgorithm::sliding_window && (n + 1) * (n + 1) > w_ns) {
            auto root = static_cast<uint64_t>(std::sqrt(static_cast<double>(w_ns)));
            while (root * root > w_ns) --root;
            while ((root + 1) * (root + 1) <= w_ns) ++root;
            const uint64_t largest = root - 1;  // the largest N with (N + 1)^2 <= W
            fail(rate_field, "'" + text + "': a sliding window of " + std::to_string(w_ns) +
                                 " ns admits at most " + std::to_string(largest) +
                                 " packets ((N + 1)^2 <= W in ns)");
        }
        r->rate_count = n;
        r->rate_period_ns = w_ns;
        r->burst_pkts = 0;
    }

    // established: { ttl, ipv4, ipv6 }: how long, and per what prefix, a source the protected
    // side answered stays in the established class.
    EstablishedOptions established(const Field &field) const {
        EstablishedOptions e;
        const Fields f = fields(field, {"ttl", "ipv4", "ipv6"});
        if (const Field *ttl = f.find("ttl")) e.ttl_ns = duration_ns(*ttl, kMaxEstablishedTtlNs);
        // Not key_lengths(field): its own field list has no ttl.
        if (const Field *a = f.find("ipv4")) e.ipv4_len = static_cast<uint8_t>(integer(*a, 0, 32));
        if (const Field *a = f.find("ipv6")) e.ipv6_len = static_cast<uint8_t>(integer(*a, 0, 128));
        return e;
    }

    // escalate: { after, min_refused_rate, ttl }, each with its default (5s, 1000/s, 10m).
    EscalateOptions escalate(const Field &field, const Rule &r) const {
        if (r.key_kind != KeyKind::src)
            fail(field,
                 std::string("escalate blocks sources: it needs a per-source key, not key ") +
                     key_kind_name(r.key_kind));
        EscalateOptions e;
        e.after_ns = 5'000'000'000ull;
        const Fields f = fields(field, {"after", "min_refused_rate", "ttl"});
        if (const Field *a = f.find("after")) e.after_ns = duration_ns(*a, kMaxEscalateNs);
        if (const Field *m = f.find("min_refused_rate"))
            rate(*m, &e.min_refused_count, &e.min_refused_period_ns);
        if (const Field *t = f.find("ttl")) e.ttl_ns = duration_ns(*t, kMaxEscalateNs);
        return e;
    }

    // A duration with its unit ("10m"), at least a second, at most max_ns.
    uint64_t duration_ns(const Field &field, uint64_t max_ns) const {
        std::string why;
        const std::optional<long long> s = parse_duration_s(scalar(field), &why);
        if (!s) fail(field, why);
        const auto ns = static_cast<uint64_t>(*s) * 1'000'000'000ull;  // s <= ten years
        if (ns > max_ns) fail(field, "'" + scalar(field) + "' is longer than a day");
        if (ns == 0) fail(field, "'" + scalar(field) + "' is no time at all");
        return ns;
    }

    AnswerCaps answer_caps(const Field &field) const {
        AnswerCaps caps;
        const Fields f = fields(field, {"per_destination", "per_core"});
        if (const Field *d = f.find("per_destination")) {
            const Fields df = fields(*d, {"rate", "burst", "ipv4", "ipv6"});
            caps.per_destination = rate_limit(*d, df);
            if (const Field *v4 = df.find("ipv4"))
                caps.destination_ipv4_len = static_cast<uint8_t>(integer(*v4, 0, 32));
            if (const Field *v6 = df.find("ipv6"))
                caps.destination_ipv6_len = static_cast<uint8_t>(integer(*v6, 0, 128));
        }
        if (const Field *c = f.find("per_core"))
            caps.per_core = rate_limit(*c, fields(*c, {"rate", "burst"}));
        return caps;
    }

    // An answer must fit the packets the rule can match: a SYN-ACK challenge only for
    // connection attempts (a challenged ACK would break an open connection), a DNS answer
    // only for UDP to named ports, a RST only for TCP.
    void check_action(const Field &action, const Rule &r) const {
        const RuleMatch &m = r.match;
        switch (r.action) {
            case RuleAction::syn_auth:
                if (m.payload.present())
                    fail(action, "syn-auth answers SYNs, which carry no payload: no payload match");
                if (is_aggregate(r.key_kind))
                    fail(action,
                         std::string("syn-auth verifies sources: it needs a per-source key, "
                                     "not key ") +
                             key_kind_name(r.key_kind) + " (put an aggregate rule beside it)");
                if ((m.tcp_flags.must_set & kTcpSyn) == 0 ||
                    (m.tcp_flags.must_clear & kTcpAck) == 0)
                    fail(action,
                         "syn-auth needs match.tcp_flags with \"syn !ack\" (it answers "
                         "connection attempts only)");
                break;
            case RuleAction::dns_truncate:
                if (!m.proto || *m.proto != kProtoUdp || m.dst_ports.empty())
                    fail(action, "dns-truncate needs match.proto udp and a dst_port (53)");
                break;
            case RuleAction::tcp_rst:
                if (!m.proto || *m.proto != kProtoTcp)
                    fail(action, "tcp-rst needs match.proto tcp (or tcp_flags)");
                break;
            case RuleAction::drop:
            case RuleAction::icmp_unreachable:
                break;
        }
    }

    // A prefix length pair { ipv4, ipv6 } into *v4 and *v6 (each kept when absent).
    void key_lengths(const Field &field, uint8_t *v4, uint8_t *v6) const {
        if (field.node->kind == DocNode::Kind::null) return;  // "dst:" alone: the defaults
        const Fields f = fields(field, {"ipv4", "ipv6"});
        if (const Field *a = f.find("ipv4")) *v4 = static_cast<uint8_t>(integer(*a, 0, 32));
        if (const Field *a = f.find("ipv6")) *v6 = static_cast<uint8_t>(integer(*a, 0, 128));
    }

    // key: { ipv4, ipv6 } (the source, as before), { src: {...} }, { dst: {...} }, both, or
    // the words src, dst and none.
    void key(const Field &field, Rule *r) const {
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
    uint8_t percent(const Field &field) const {
        const std::string &text = scalar(field);
        if (text.empty() || text.back() != '%')
            fail(field, "'" + text + "' is not a percentage (write it as 30%)");
        return static_cast<uint8_t>(
            integer_text(field, std::string_view(text).substr(0, text.size() - 1), 0, 100));
    }

    // reserve: { established, verified, known }: what is left of the burst is the new sources'.
    // Every class must keep at least one packet of burst, or it could never pass.
    void reserve(const Field &field, Rule *r) const {
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
    void check_reserve(const Field &at, const Rule &r) const {
        if (!is_aggregate(r.key_kind)) return;
        const bool window = r.algorithm == RuleAlgorithm::fixed_window ||
                            r.algorithm == RuleAlgorithm::sliding_window;
        const uint64_t whole = window ? r.rate_count : r.burst_pkts;
        if (whole * (100 - r.reserve.total()) < 100)
            fail(at, std::string(window ? "a window of " : "burst ") + std::to_string(whole) +
                         " leaves new sources less than one packet after the classes' reserve of " +
                         std::to_string(r.reserve.total()) +
                         "% (raise the burst, or set reserve: lower)");
    }

    // Names appear in metrics labels and CLI output, hence the plain character set.
    std::string rule_name(const Field &field) const {
        const std::string &name = scalar(field);
        if (name.empty() || name.size() > kMaxRuleNameLen)
            fail(field, "name must be 1-" + std::to_string(kMaxRuleNameLen) + " characters");
        for (char c : name) {
            const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                            (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
            if (!ok) fail(field, "name '" + name + "' may use only A-Z a-z 0-9 _ . -");
        }
        return name;
    }

    Rule rule(const Field &field, const std::vector<Rule> &earlier) const {
        const Fields f =
            fields(field, {"name", "match", "key", "algorithm", "limit", "action", "slip",
                           "verified_ttl", "mode", "on_table_full", "reserve", "escalate"});
        Rule r;
        r.line = field.line;
        const Field &name = require(f, "name");
        r.name = rule_name(name);
        for (size_t i = 0; i < earlier.size(); ++i) {
            if (earlier[i].name != r.name) continue;
            fail(name,
                 "duplicate rule name '" + r.name + "' (first used by rules[" + std::to_string(i) +
                     "]" +
                     (earlier[i].line > 0 ? ", line " + std::to_string(earlier[i].line) : "") +
                     ")");
        }
        if (const Field *m = f.find("match")) r.match = match(*m);
        if (const Field *k = f.find("key")) key(*k, &r);
        if (!is_aggregate(r.key_kind)) r.reserve = ClassReserve{0, 0, 0};
        if (const Field *res = f.find("reserve")) reserve(*res, &r);
        if (const Field *a = f.find("algorithm")) r.algorithm = choice(*a, kAlgorithms);
        const Field &limit_field = require(f, "limit");
        limit(limit_field, &r);
        check_reserve(f.find("reserve") != nullptr ? *f.find("reserve") : limit_field, r);
        if (const Field *a = f.find("action")) {
            r.action = choice(*a, kActions);
            check_action(*a, r);
        }
        if (const Field *slip = f.find("slip")) {
            if (r.action != RuleAction::dns_truncate) fail(*slip, "slip needs action dns-truncate");
            r.slip = static_cast<uint32_t>(integer(*slip, 0, kMaxSlip));
        }
        if (const Field *ttl = f.find("verified_ttl")) {
            if (r.action != RuleAction::syn_auth) fail(*ttl, "verified_ttl needs action syn-auth");
            r.verified_ttl_ns = duration_ns(*ttl, kMaxVerifiedTtlNs);
        }
        if (const Field *m = f.find("mode")) r.mode = choice(*m, kModes);
        if (const Field *t = f.find("on_table_full")) r.on_table_full = choice(*t, kTableFull);
        if (const Field *e = f.find("escalate")) r.escalate = escalate(*e, r);
        return r;
    }

    const std::string &file_;
    const PrecompiledPayloads *precompiled_;
    size_t rule_index_ = 0;  // of the rule being read, for precompiled_
};

}  // namespace

Config config_from_doc(const DocNode &doc, const std::string &file,
                       const PrecompiledPayloads *precompiled) {
    return ConfigParser(file, precompiled).parse(doc);
}

}  // namespace floodgate
