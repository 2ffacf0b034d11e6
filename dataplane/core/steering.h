// Steering: which worker owns a packet (docs/design.md, "Several cores: steering"). When every
// packet of a source prefix reaches one worker, the keys of that prefix and longer are that
// worker's alone: never published to the merge, never copied into another worker's table, and
// limited exactly. What steering cannot give one owner (aggregate keys, source prefixes coarser
// than the steering, ports that do not steer) is shared through the merge as before.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "dataplane/api/rules.h"
#include "dataplane/core/parse.h"
#include "dataplane/core/rule_match.h"

namespace floodgate {

// How packets reach the workers, as the dataplane set its ports up (or replay models it).
struct Steering {
    // Every packet whose source shares the first ipv4_len / ipv6_len bits reaches one worker:
    // the NIC's RSS on the source alone with a key that reads only that prefix, or the
    // software stage. False: any worker may see any packet (everything is shared).
    bool by_source = false;
    uint8_t ipv4_len = 32;
    uint8_t ipv6_len = 64;
    // Frames going out (inside to outside) reach the worker that owns their destination, so
    // established marks are that worker's alone too.
    bool replies_by_destination = false;
    // The prefix's masks ([0] IPv4, [1] IPv6, as key_masks gives them), set with the lengths.
    uint64_t mask_hi[2] = {};
    uint64_t mask_lo[2] = {};

    // Whether keys on the first len bits of the source, in family (4 or 6), have one owner.
    bool owns(unsigned len, unsigned family) const {
        return by_source && len >= (family == 6 ? ipv6_len : ipv4_len);
    }
    // Whether keys on the first ipv4_len / ipv6_len bits are shared through the merge, per
    // family ([0] IPv4, [1] IPv6): unless they have one owner.
    void published(unsigned key_ipv4_len, unsigned key_ipv6_len, bool (&out)[2]) const {
        out[0] = !owns(key_ipv4_len, 4);
        out[1] = !owns(key_ipv6_len, 6);
    }
};

// The source prefix to steer by: the rules file's `steering`, else the shortest source prefix
// of its src and src+dst rules, but never shorter than /24 (IPv4) and /48 (IPv6): a rule on
// coarser prefixes is shared rather than piling a whole /16 onto one core. /32 and /64 when no
// rule keys by source.
inline constexpr uint8_t kMinDerivedSteeringIpv4 = 24;
inline constexpr uint8_t kMinDerivedSteeringIpv6 = 48;
SteeringOptions steering_prefix(const Config &config);

// What a NIC can steer by, given the prefix wanted. One Toeplitz key hashes both families, so
// it reads one prefix length P of whichever address it hashes: IPv4 by min(P, 32), IPv6 by P.
// The queue comes from the hash's low bits, which only the address's first P - 25 bits move
// (zero_key_past_prefix below): a key of P < 57 would choose the queue by an IPv4 address's
// first few bits (by /7 at P = 32, one queue at P = 24). So P is at least 64: IPv4 steered by
// the whole address, IPv6 by the wanted length or /64; rules on coarser prefixes are shared.
unsigned nic_prefix_bits(const SteeringOptions &wanted);
Steering nic_steering(const SteeringOptions &wanted, bool replies_by_destination);
// The software stage and replay steer by exactly the prefix wanted. replies_by_destination:
// frames going out are steered too (replay; the live stage steers only what comes in).
Steering software_steering(const SteeringOptions &wanted, bool replies_by_destination);

// Zeroes a Toeplitz key (RSS) past its first prefix_bits bits. Toeplitz XORs, for each set bit
// i of the hashed input, the 32 key bits from bit i: with the key zero from bit P, input bits
// from P on add nothing, so the hash reads only the address's first P bits. The low 7 bits of
// the hash, which pick one of 128 RETA entries, come from key bits i+25 to i+31, so the input's
// last 25 bits before P do not pick the queue at all: with a /64 key, every /64 of one /39
// reaches one queue. Ownership is exact; the spread is by /39 (test_steering.cpp). A NIC with
// RTE_ETH_RSS_L3_PRE64 and a full key would spread by the whole /64.
void zero_key_past_prefix(uint8_t *key, size_t key_len, unsigned prefix_bits);

// Whether a rule's keys are each seen by one of `cores` cores ("core-local") or shared through
// the merge, and why: "shared (dst key)", "shared (IPv4 /24 coarser than the steering /32)".
std::string rule_scope(const CompiledRule &r, const Steering &s, unsigned cores);

// An address of a frame, read as cheaply as the owner's choice allows (the software stage and
// replay, for every frame, before the pipeline parses it): Ethernet, up to kMaxVlanTags tags,
// the IPv4 or IPv6 header's address, from the captured bytes. False when there is none to read
// (not IP, cut short): such a frame has no owner, and the pipeline judges it wherever it is.
struct FrameAddress {
    uint8_t family = 0;                // 4 or 6
    alignas(8) uint8_t addr[16] = {};  // network order; IPv4 in the first 4 bytes, the rest zero
};
bool frame_address(const uint8_t *frame, uint32_t captured, bool destination, FrameAddress *out);
// The worker of `workers` that owns the address under s (s.by_source): a hash of its steering
// prefix, the same in every process. A frame coming in belongs to its source's owner; one
// going out to its destination's (the reply's source).
unsigned address_owner(const FrameAddress &a, const Steering &s, unsigned workers);
// The queue a NIC steering by source puts an address's frames on, computed as the NIC does:
// the Toeplitz hash of the address alone (RTE_ETH_RSS_L3_SRC_ONLY) under the port's key
// (zeroed past the prefix), then the RETA's entry hash % reta_size, which setup_port fills
// round robin over `queues` (entry i, queue i % queues). For the frames the NIC did not hash,
// so that they reach the worker their hashed siblings reach.
unsigned nic_queue(const FrameAddress &a, const uint8_t *key, unsigned reta_size, unsigned queues);

}  // namespace floodgate
