#include "dataplane/pipeline/cluster_keys.h"

#include <algorithm>
#include <bit>
#include <cstring>

namespace floodgate {

namespace {

unsigned mask_len(const uint64_t (&hi)[2], const uint64_t (&lo)[2], unsigned f) {
    return static_cast<unsigned>(std::popcount(hi[f]) + std::popcount(lo[f]));
}

std::string prefix_text(uint8_t family, const uint8_t *addr, unsigned len) {
    Prefix p;
    p.family = family;
    p.len = static_cast<uint8_t>(len);
    std::memcpy(p.addr.data(), addr, p.addr.size());
    return format_prefix(p);
}

// One prefix of the key: family and length as the rule keys them, host bits clear.
bool read_prefix(const std::string &text, uint8_t family, const uint64_t (&hi)[2],
                 const uint64_t (&lo)[2], uint8_t *addr, uint8_t *family_out, std::string *why) {
    std::optional<Prefix> p = parse_prefix(text, why);
    if (!p) return false;
    if (family != 0 && p->family != family) {
        *why = "'" + text + "' is not of the key's other address family";
        return false;
    }
    const unsigned f = p->family == 6;
    if (p->len != mask_len(hi, lo, f)) {
        *why = "'" + text + "' is not a /" + std::to_string(mask_len(hi, lo, f)) +
               " as the rule keys it";
        return false;
    }
    std::memcpy(addr, p->addr.data(), 16);
    *family_out = p->family;
    return true;
}

}  // namespace

std::string shared_key_text(const CompiledRule &r, const SharedRecord &rec) {
    const unsigned f = rec.family == 6;
    switch (r.key_kind) {
        case KeyKind::none:
            return "*";
        case KeyKind::src_dst:
            return prefix_text(rec.family, rec.src, mask_len(r.key_mask_hi, r.key_mask_lo, f)) +
                   ">" +
                   prefix_text(rec.family, rec.dst, mask_len(r.dst_mask_hi, r.dst_mask_lo, f));
        case KeyKind::dst:
        case KeyKind::src:
        default:
            return prefix_text(rec.family, rec.dst, mask_len(r.key_mask_hi, r.key_mask_lo, f));
    }
}

bool shared_key_hash(const CompiledRule &r, const std::string &text, const LimitTable &table,
                     uint64_t *hash, std::string *why) {
    if (text.size() > kMaxSharedKeyText) {
        *why = "a key longer than " + std::to_string(kMaxSharedKeyText) + " characters";
        return false;
    }
    PacketInfo p;
    std::memset(p.src, 0, sizeof p.src);
    std::memset(p.dst, 0, sizeof p.dst);
    switch (r.key_kind) {
        case KeyKind::none:
            if (text != "*") {
                *why = "'" + text + "' is not * (the rule has key none)";
                return false;
            }
            p.family = 4;
            break;
        case KeyKind::src_dst: {
            const size_t arrow = text.find('>');
            if (arrow == std::string::npos) {
                *why = "'" + text + "' is not SOURCE>DESTINATION (the rule keys pairs)";
                return false;
            }
            if (!read_prefix(text.substr(0, arrow), 0, r.key_mask_hi, r.key_mask_lo, p.src,
                             &p.family, why) ||
                !read_prefix(text.substr(arrow + 1), p.family, r.dst_mask_hi, r.dst_mask_lo, p.dst,
                             &p.family, why))
                return false;
            break;
        }
        case KeyKind::dst:
            if (!read_prefix(text, 0, r.key_mask_hi, r.key_mask_lo, p.dst, &p.family, why))
                return false;
            break;
        case KeyKind::src:
        default:
            *why = "rule " + r.name + " has a per-source key, which is never shared";
            return false;
    }
    *hash = rule_key_hash(r, p, table, rule_key(r, p));
    return true;
}

void add_shared_totals(const RuleSet &rules, const std::vector<SharedRecord> &records,
                       SharedTotals *totals) {
    for (const SharedRecord &rec : records)
        for (const CompiledRule &r : rules.rules())
            if (r.key_id == rec.key_id && r.shared) {
                (*totals)[{r.name, shared_key_text(r, rec)}] += rec.packets;
                break;
            }
}

bool shared_charges(const RuleSet &rules, const std::string &rule_name, const std::string &key,
                    uint64_t packets, const LimitTable &table, std::vector<Consumption> *out,
                    std::string *why) {
    const CompiledRule *r = rules.find_rule(rule_name);
    if (r == nullptr || !r->shared) {
        *why = "no shared rule named '" + rule_name.substr(0, kMaxRuleNameLen) + "'";
        return false;
    }
    if (packets == 0 || packets > kMaxSharedPackets) {
        *why = "a count of " + std::to_string(packets) + " packets (1 to 2^40)";
        return false;
    }
    uint64_t hash;
    if (!shared_key_hash(*r, key, table, &hash, why)) return false;
    for (uint64_t left = packets; left > 0;) {
        Consumption c = Consumption::of(hash, r->limit);
        c.packets = static_cast<uint32_t>(std::min<uint64_t>(left, UINT32_MAX));
        left -= c.packets;
        out->push_back(c);
    }
    return true;
}

}  // namespace floodgate
