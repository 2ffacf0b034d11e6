// syn-proxy's cookie: the initial sequence number of floodgate's SYN-ACK to a client, from which
// the client's ACK alone rebuilds what the server's SYN must carry. Nothing is stored per
// connection attempt, so a spoofed SYN flood costs no memory.
//
//   bit 31 ............ 8   7 ... 5   4 ..... 1   0
//       MAC (24 bits)       MSS class  wscale + 1  SACK-permitted     (low byte XOR the MAC's)
//
// - The MAC is SipHash-2-4 (syn_cookie.h) of the connection's addresses and ports, the client's
//   ISN and the time slot, under a key of its own (derived from syn-auth's, so the two cookies
//   never stand for each other). An ACK guessed at random passes with probability 2^-24 per
//   slot tried; it is checked for the current and the previous slot, as syn-auth's RST is.
// - The options sit in the ISN, not in TCP timestamps (Linux's way), because some clients turn
//   timestamps off; DPVS and AWS's BPF SYN proxy do the same. XORed with the MAC's low byte so
//   that an ISN does not show them (all 256 values decode: the MAC is what authenticates).
// - The window scale is exact (4 bits: none or 0-14), since a server told a larger shift than
//   the client uses would overrun the client's buffer, and a smaller one would cut its window.
// - The MSS is rounded down to one of the eight classes of tcp_options.h (kProxyMssClasses;
//   one below 536 is carried as 536).
#pragma once

#include <cstdint>

#include "dataplane/answer/syn_cookie.h"
#include "dataplane/core/tcp_options.h"

namespace floodgate {

inline CookieKey proxy_cookie_key(const CookieKey &syn_auth_key) {
    const uint64_t label[2] = {0x7379'6e2d'7072'6f78ull, 1};  // "syn-prox", version 1
    return {siphash24(syn_auth_key, label, 2), siphash24(syn_auth_key, label, 1)};
}

namespace detail {
// The tuple as syn_cookie() packs it, then the client's ISN.
inline uint32_t proxy_mac(const CookieKey &key, const PacketInfo &p, uint32_t client_isn,
                          uint64_t slot) {
    uint64_t w[6];
    const unsigned n = cookie_message(p, slot, w);
    w[n] = client_isn;
    return static_cast<uint32_t>(siphash24(key, w, n + 1));
}

inline uint8_t pack_options(const ProxiedOptions &o) {
    const uint8_t ws = o.wscale == kNoWindowScale ? 0 : static_cast<uint8_t>(o.wscale + 1);
    return static_cast<uint8_t>(proxy_mss_class(o.mss) << 5 | ws << 1 | (o.sack_permitted ? 1 : 0));
}

inline ProxiedOptions unpack_options(uint8_t b) {
    const uint8_t ws = (b >> 1) & 0xf;
    return {kProxyMssClasses[b >> 5], ws == 0 ? kNoWindowScale : static_cast<uint8_t>(ws - 1),
            (b & 1) != 0};
}
}  // namespace detail

// The ISN of the SYN-ACK answering a SYN (p: as the client sent it, source = client) whose own
// ISN is client_isn.
inline uint32_t proxy_cookie(const CookieKey &key, const PacketInfo &p, uint32_t client_isn,
                             const ProxiedOptions &options, uint64_t slot) {
    const uint32_t mac = detail::proxy_mac(key, p, client_isn, slot);
    return (mac & 0xffffff00u) | ((mac ^ detail::pack_options(options)) & 0xffu);
}

// Checks the ACK completing a proxied handshake (p: the ACK, source = client): its sequence
// number is the client's ISN + 1 and its acknowledgment the cookie + 1. On success *options
// holds what the client's SYN asked for. The options byte is not under the MAC: only a client
// that received the SYN-ACK can change it, and it could as well have asked for other options.
inline bool proxy_cookie_check(const CookieKey &key, const PacketInfo &p, uint64_t now_ns,
                               ProxiedOptions *options) {
    const uint32_t cookie = p.tcp_ack - 1;
    const uint32_t client_isn = p.tcp_seq - 1;
    const uint64_t slot = cookie_slot(now_ns);
    for (unsigned back = 0; back < 2 && back <= slot; ++back) {
        const uint32_t mac = detail::proxy_mac(key, p, client_isn, slot - back);
        if ((mac & 0xffffff00u) != (cookie & 0xffffff00u)) continue;
        *options = detail::unpack_options(static_cast<uint8_t>((cookie ^ mac) & 0xffu));
        return true;
    }
    return false;
}

}  // namespace floodgate
