// What a rule matches: protocol, ports, prefixes, TCP flags and payload patterns
// (rules/config_parser.h).
#include <algorithm>
#include <map>
#include <memory>
#include <string_view>
#include <utility>

#include "dataplane/api/numbers.h"
#include "dataplane/api/protocols.h"
#include "dataplane/patterns/compile_budget.h"
#include "dataplane/patterns/payload_database.h"
#include "rules/config_parser.h"
#include "rules/payload_text.h"

namespace floodgate::validation {

namespace {

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
constexpr std::pair<std::string_view, bool> kBooleans[] = {{"true", true}, {"false", false}};

}  // namespace

Prefix ConfigParser::prefix(const Field &field) const {
    std::string why;
    std::optional<Prefix> p = parse_prefix(scalar(field), &why);
    if (!p) fail(field, why);
    return *p;
}

// "53" or "1000-2000", both ends inclusive.
PortRange ConfigParser::port_range(const Field &field) const {
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
std::vector<PortRange> ConfigParser::ports(const Field &field) const {
    std::vector<PortRange> out;
    for (const Field &item : one_or_more(field)) {
        if (out.size() == kMaxPortRanges)
            fail(item, "more than " + std::to_string(kMaxPortRanges) +
                           " ports or ranges (write ranges: 1000-2000)");
        out.push_back(port_range(item));
    }
    return out;
}

std::vector<Prefix> ConfigParser::prefixes(const Field &field) const {
    std::vector<Prefix> out;
    for (const Field &item : one_or_more(field)) out.push_back(prefix(item));
    return out;
}

uint8_t ConfigParser::proto(const Field &field) const {
    const std::string &text = scalar(field);
    for (const auto &[name, number] : kProtoNames)
        if (name == text) return number;
    if (!text.empty() && text[0] >= '0' && text[0] <= '9')
        return static_cast<uint8_t>(integer(field, 0, 255));
    fail(field, "unknown protocol '" + text + "' (expected " + join_names(kProtoNames) +
                    " or a number 0-255)");
}

// "syn !ack": names separated by spaces or commas; "!" means the flag must be clear.
TcpFlagMatch ConfigParser::tcp_flags(const Field &field) const {
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

RuleMatch ConfigParser::match(const Field &field) const {
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
        fail(*any_port, "ports need proto tcp or udp (proto is " + std::to_string(*m.proto) + ")");
    }
    if (flags != nullptr) {
        if (m.proto && *m.proto != kProtoTcp)
            fail(*flags, "tcp_flags needs proto tcp (proto is " + std::to_string(*m.proto) + ")");
        m.proto = kProtoTcp;
    }
    if (const Field *p = f.find("payload")) {
        // Only these have an L4 header the parser reads, hence a payload it can find.
        if (m.proto && *m.proto != kProtoTcp && *m.proto != kProtoUdp && *m.proto != kProtoIcmp &&
            *m.proto != kProtoIcmpv6)
            fail(*p, "payload needs proto tcp, udp, icmp or icmpv6 (proto is " +
                         std::to_string(*m.proto) + ")");
        m.payload = payload(*p);
    }
    return m;
}

// payload: { patterns: [...], offset, depth }; each pattern a literal ('GET / HTTP/1.1',
// '\x00\x01'), { regex: ..., caseless: true }, { literal: ..., caseless: true } or
// { dns_suffix: victim.example }. Compiled once the whole file is read (compile_payloads).
PayloadMatch ConfigParser::payload(const Field &field) const {
    const Fields f = fields(field, {"patterns", "offset", "depth"});
    PayloadMatch m;
    const Field &list = require(f, "patterns");
    std::vector<Field> items_ = one_or_more(list);
    if (items_.size() > kMaxPayloadPatterns)
        fail(list, std::to_string(items_.size()) + " patterns, over " +
                       std::to_string(kMaxPayloadPatterns));
    for (const Field &item : items_) m.patterns.push_back(pattern(item));
    if (const Field *o = f.find("offset"))
        m.offset = static_cast<uint32_t>(integer(*o, 0, kMaxPayloadWindow));
    if (const Field *d = f.find("depth"))
        m.depth = static_cast<uint32_t>(integer(*d, 1, kMaxPayloadWindow));
    payloads_.push_back(PendingPayload{rule_index_, list, std::move(items_)});
    return m;
}

// Every rule's patterns, compiled once per distinct list (rules that share a list, by a YAML
// alias or by writing it twice, share its database), after the ruleset's budget is checked
// over the distinct lists: nothing is compiled for a file that asks too much
// (dataplane/patterns/compile_budget.h). A list the control plane compiled already (a load
// request's) is taken instead of compiled again.
void ConfigParser::compile_payloads(Config *cfg) const {
    struct Distinct {
        std::string fingerprint;
        std::vector<size_t> pending;  // indexes into payloads_ of the rules that share it
    };
    std::vector<Distinct> lists;
    // Lists by fingerprint; a 64-bit hash, so a list that only shares it is a list of its own.
    std::map<std::string, std::vector<size_t>> by_fingerprint;
    const auto patterns_of = [&](size_t pending) -> const std::vector<PayloadPattern> & {
        return cfg->rules[payloads_[pending].rule].match.payload.patterns;
    };
    PatternCost total;
    for (size_t i = 0; i < payloads_.size(); ++i) {
        std::string print = payload_fingerprint(patterns_of(i));
        std::vector<size_t> &candidates = by_fingerprint[print];
        const auto same = std::find_if(candidates.begin(), candidates.end(), [&](size_t list) {
            return patterns_of(lists[list].pending.front()) == patterns_of(i);
        });
        if (same != candidates.end()) {
            lists[*same].pending.push_back(i);
            continue;
        }
        candidates.push_back(lists.size());
        lists.push_back({std::move(print), {i}});
        total += pattern_cost(patterns_of(i));
        const std::string over = over_budget(total);
        if (!over.empty()) fail(payloads_[i].list, over);
    }
    for (const Distinct &d : lists) {
        const PendingPayload &first = payloads_[d.pending.front()];
        std::shared_ptr<const PayloadDatabase> db = precompiled(d.fingerprint, d.pending);
        if (!db) {
            std::string error;
            int bad = -1;
            db = PayloadDatabase::compile(cfg->rules[first.rule].match.payload.patterns, &error,
                                          &bad);
            if (!db) {
                if (bad >= 0 && static_cast<size_t>(bad) < first.items.size())
                    fail(first.items[static_cast<size_t>(bad)],
                         "pattern " + std::to_string(bad) + ": " + error);
                fail(first.list, error);
            }
        }
        for (size_t i : d.pending) cfg->rules[payloads_[i].rule].match.payload.compiled = db;
    }
}

// The database a load request carried for one of the rules that share the list, if its
// fingerprint is the list's.
std::shared_ptr<const PayloadDatabase> ConfigParser::precompiled(
    const std::string &fingerprint, const std::vector<size_t> &pending) const {
    if (precompiled_ == nullptr) return nullptr;
    for (size_t i : pending) {
        const auto it = precompiled_->find(payloads_[i].rule);
        if (it != precompiled_->end() && it->second.database &&
            it->second.fingerprint == fingerprint)
            return it->second.database;
    }
    return nullptr;
}

PayloadPattern ConfigParser::pattern(const Field &field) const {
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
            fail(*re,
                 "a regular expression of 1-" + std::to_string(kMaxPayloadPatternBytes) + " bytes");
        for (unsigned char c : p.text)
            if (c < 0x20 || c == 0x7f)
                fail(*re, "a control byte in a regular expression (write \\xHH)");
        if (regex_weight(p.text) > kMaxRegexWeight)
            fail(*re, "weighs over " + std::to_string(kMaxRegexWeight) +
                          " (a bounded repeat x{m,n} weighs n times x): it would take seconds "
                          "to compile alone");
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

}  // namespace floodgate::validation
