#include "dataplane/core/steering.h"

#include <algorithm>
#include <cstring>

#include <rte_thash.h>

#include "dataplane/core/keyed_hash.h"
#include "dataplane/core/load_be.h"
#include "dataplane/core/rule_match.h"

namespace floodgate {

SteeringOptions steering_prefix(const Config &config) {
    if (config.steering.set) return config.steering;
    SteeringOptions s;
    bool any = false;
    uint8_t v4 = 32, v6 = 128;
    for (const Rule &r : config.rules) {
        if (r.key_kind != KeyKind::src && r.key_kind != KeyKind::src_dst) continue;
        any = true;
        v4 = std::min(v4, r.key_ipv4_len);
        v6 = std::min(v6, r.key_ipv6_len);
    }
    if (any) {
        s.ipv4_len = std::max(v4, kMinDerivedSteeringIpv4);
        s.ipv6_len = std::max(v6, kMinDerivedSteeringIpv6);
    }
    return s;
}

unsigned nic_prefix_bits(const SteeringOptions &wanted) {
    return std::max<unsigned>(wanted.ipv6_len, 64);
}

namespace {
Steering by_source(unsigned ipv4_len, unsigned ipv6_len, bool replies_by_destination) {
    Steering s;
    s.by_source = true;
    s.ipv4_len = static_cast<uint8_t>(ipv4_len);
    s.ipv6_len = static_cast<uint8_t>(ipv6_len);
    s.replies_by_destination = replies_by_destination;
    key_masks(ipv4_len, &s.mask_hi[0], &s.mask_lo[0]);
    key_masks(ipv6_len, &s.mask_hi[1], &s.mask_lo[1]);
    return s;
}
}  // namespace

Steering nic_steering(const SteeringOptions &wanted, bool replies_by_destination) {
    const unsigned p = nic_prefix_bits(wanted);
    return by_source(std::min(p, 32u), p, replies_by_destination);
}

Steering software_steering(const SteeringOptions &wanted, bool replies_by_destination) {
    return by_source(wanted.ipv4_len, wanted.ipv6_len, replies_by_destination);
}

void zero_key_past_prefix(uint8_t *key, size_t key_len, unsigned prefix_bits) {
    for (size_t byte = 0; byte < key_len; ++byte) {
        const size_t first_bit = byte * 8;
        if (first_bit >= prefix_bits)
            key[byte] = 0;
        else if (first_bit + 8 > prefix_bits)  // bits are read most significant first
            key[byte] &= static_cast<uint8_t>(0xff00u >> (prefix_bits - first_bit));
    }
}

std::string rule_scope(const CompiledRule &r, const Steering &s, unsigned cores) {
    if (cores == 1) return "core-local (one core)";
    if (!r.published[0] && !r.published[1]) return "core-local";
    if (!s.by_source) return "shared (no steering)";
    if (r.key_kind != KeyKind::src && r.key_kind != KeyKind::src_dst)
        return std::string("shared (") + key_kind_name(r.key_kind) + " key)";
    std::string why;
    for (unsigned f : {4u, 6u}) {
        if (!r.published[f == 6]) continue;
        if (!why.empty()) why += ", ";
        why += (f == 4 ? "IPv4 /" : "IPv6 /") + std::to_string(r.key_len[f == 6]) +
               " coarser than the steering /" + std::to_string(f == 4 ? s.ipv4_len : s.ipv6_len);
    }
    return "shared (" + why + ")";
}

namespace {
// A fixed seed: every process (replay, each worker, a second box) must pick the same owner.
constexpr HashSeed kOwnerSeed{{0x5374656572696e67ull, 0x6f776e6572ull, 0, 0}};

unsigned owner_of(uint8_t family, const uint8_t *addr, const Steering &s, unsigned workers) {
    const unsigned f = family == 6;
    uint64_t hi, lo;
    std::memcpy(&hi, addr, 8);
    std::memcpy(&lo, addr + 8, 8);
    const uint64_t h = keyed_hash(kOwnerSeed, hi & s.mask_hi[f], lo & s.mask_lo[f], family);
    // Multiply-shift onto [0, workers): no division, and every worker an equal share.
    return static_cast<unsigned>((static_cast<unsigned __int128>(h) * workers) >> 64);
}
}  // namespace

bool frame_address(const uint8_t *frame, uint32_t captured, bool destination, FrameAddress *out) {
    uint32_t off = 12;
    if (captured < off + 2) return false;
    uint16_t ether_type = load_be16(frame + off);
    for (unsigned tags = 0; is_vlan_tag(ether_type); ++tags) {
        if (tags == kMaxVlanTags || captured < off + 4 + 2) return false;
        off += 4;
        ether_type = load_be16(frame + off);
    }
    off += 2;  // the IP header
    if (ether_type == kEtherIpv4) {
        if (captured < off + 20 || frame[off] >> 4 != 4) return false;
        out->family = 4;
        std::memset(out->addr, 0, sizeof(out->addr));
        std::memcpy(out->addr, frame + off + (destination ? 16 : 12), 4);
        return true;
    }
    if (ether_type == kEtherIpv6) {
        if (captured < off + 40 || frame[off] >> 4 != 6) return false;
        out->family = 6;
        std::memcpy(out->addr, frame + off + (destination ? 24 : 8), 16);
        return true;
    }
    return false;
}

unsigned address_owner(const FrameAddress &a, const Steering &s, unsigned workers) {
    return owner_of(a.family, a.addr, s, workers);
}

unsigned nic_queue(const FrameAddress &a, const uint8_t *key, unsigned reta_size, unsigned queues) {
    // rte_softrss reads host-order words, the address's first byte the most significant.
    uint32_t words[4];
    const unsigned n_words = a.family == 6 ? 4 : 1;
    for (unsigned w = 0; w < n_words; ++w) words[w] = load_be32(a.addr + 4 * w);
    const uint32_t hash = rte_softrss(words, n_words, key);
    return hash % reta_size % queues;
}

}  // namespace floodgate
