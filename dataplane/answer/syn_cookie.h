// The cookie of syn-auth: a keyed pseudo-random function of a connection attempt's addresses,
// ports and a time slot, carried in the acknowledgment number of floodgate's SYN-ACK.
//
// The SYN-ACK's acknowledgment number is deliberately not the client's ISN + 1. A real TCP
// stack in SYN-SENT answers an unacceptable acknowledgment with a RST whose sequence number is
// that acknowledgment (RFC 9293 3.10.7.3), and retransmits its SYN when its timer fires (1 s on
// Linux): the RST proves the source receives what is sent to its address, the retransmitted
// SYN finds it verified and passes, and the user's connect() just succeeds a second later. A
// spoofer never sees the SYN-ACK, so it cannot send the RST.
//
// SipHash-2-4 (Aumasson and Bernstein), not the table's wyhash-style mix: a cookie is a
// security boundary that anyone with a real address can collect samples of, and SipHash is
// the PRF made for short inputs under a secret key. The key is drawn at start (fixed under
// replay, like the hash seed) and each slot of 2^36 ns (68.7 s) derives its own value, so the
// secret in effect rotates every slot; a RST is accepted for the current and the previous
// slot, so a cookie lives between one and two slots.
#pragma once

#include <cstdint>
#include <cstring>

#include "dataplane/core/parse.h"

namespace floodgate {

struct CookieKey {
    uint64_t k0 = 0;
    uint64_t k1 = 0;
};

inline constexpr unsigned kCookieSlotShift = 36;

namespace detail {
inline uint64_t rotl(uint64_t x, unsigned b) {
    return (x << b) | (x >> (64 - b));
}
inline void sip_round(uint64_t &v0, uint64_t &v1, uint64_t &v2, uint64_t &v3) {
    v0 += v1;
    v1 = rotl(v1, 13);
    v1 ^= v0;
    v0 = rotl(v0, 32);
    v2 += v3;
    v3 = rotl(v3, 16);
    v3 ^= v2;
    v0 += v3;
    v3 = rotl(v3, 21);
    v3 ^= v0;
    v2 += v1;
    v1 = rotl(v1, 17);
    v1 ^= v2;
    v2 = rotl(v2, 32);
}
}  // namespace detail

// SipHash-2-4 of n 64-bit little-endian words (the message length is 8n bytes).
inline uint64_t siphash24(const CookieKey &key, const uint64_t *words, unsigned n) {
    uint64_t v0 = key.k0 ^ 0x736f6d6570736575ull;
    uint64_t v1 = key.k1 ^ 0x646f72616e646f6dull;
    uint64_t v2 = key.k0 ^ 0x6c7967656e657261ull;
    uint64_t v3 = key.k1 ^ 0x7465646279746573ull;
    for (unsigned i = 0; i < n; ++i) {
        v3 ^= words[i];
        detail::sip_round(v0, v1, v2, v3);
        detail::sip_round(v0, v1, v2, v3);
        v0 ^= words[i];
    }
    const uint64_t last = static_cast<uint64_t>(8 * n) << 56;
    v3 ^= last;
    detail::sip_round(v0, v1, v2, v3);
    detail::sip_round(v0, v1, v2, v3);
    v0 ^= last;
    v2 ^= 0xff;
    for (int i = 0; i < 4; ++i) detail::sip_round(v0, v1, v2, v3);
    return v0 ^ v1 ^ v2 ^ v3;
}

// The cookie of a connection attempt as the client sends it (source = client): the same for
// its SYN and for the RST that answers floodgate's SYN-ACK. The message is packed into as few
// words as hold it, since each word costs SipHash two rounds: the ports, family and slot share
// one word (a slot is now_ns >> 36, under 2^28), and IPv4's two addresses share another, so an
// IPv4 cookie takes 2 words (10 rounds) and an IPv6 one 5 (16 rounds) where 6 words each took
// 18 (callgrind per SYN answered: perf/results/notes.md).
// The attempt packed as syn_cookie() hashes it into w (room for 5 words); returns the count.
inline unsigned cookie_message(const PacketInfo &p, uint64_t slot, uint64_t *w) {
    const uint64_t tail =
        uint64_t{p.src_port} << 16 | p.dst_port | uint64_t{p.family} << 32 | slot << 35;
    if (p.family == 4) {
        uint32_t src, dst;
        std::memcpy(&src, p.src, 4);
        std::memcpy(&dst, p.dst, 4);
        w[0] = uint64_t{src} | uint64_t{dst} << 32;
        w[1] = tail;
        return 2;
    }
    std::memcpy(&w[0], p.src, 16);
    std::memcpy(&w[2], p.dst, 16);
    w[4] = tail;
    return 5;
}

inline uint32_t syn_cookie(const CookieKey &key, const PacketInfo &p, uint64_t slot) {
    uint64_t w[5];
    const unsigned n = cookie_message(p, slot, w);
    return static_cast<uint32_t>(siphash24(key, w, n));
}

inline uint64_t cookie_slot(uint64_t now_ns) {
    return now_ns >> kCookieSlotShift;
}

// Whether number (a RST's sequence number) is the cookie of this tuple now or one slot ago.
inline bool cookie_valid(const CookieKey &key, const PacketInfo &p, uint32_t number,
                         uint64_t now_ns) {
    const uint64_t slot = cookie_slot(now_ns);
    return number == syn_cookie(key, p, slot) ||
           (slot > 0 && number == syn_cookie(key, p, slot - 1));
}

}  // namespace floodgate
