// The options of a TCP SYN that a SYN proxy has to carry from the client to the server: the
// maximum segment size (RFC 9293 3.7.1), the window scale (RFC 7323 2), SACK-permitted (RFC
// 2018) and timestamps (RFC 7323 3). Read from the client's SYN, then encoded in the proxy's
// cookie (dataplane/answer/proxy_cookie.h) so that nothing is stored before the client's ACK.
//
// The reader walks at most the 40 option bytes a data offset can give, so it is bounded
// whatever the packet. A known option with the wrong length, or an option running past the
// header, makes the SYN malformed: a real stack never sends one, and guessing would hand the
// server options the client did not ask for.
#pragma once

#include <cstdint>

#include "dataplane/api/protocols.h"

namespace floodgate {

inline constexpr uint8_t kNoWindowScale = 0xff;
inline constexpr uint8_t kMaxWindowScale = 14;  // RFC 7323 2.3: larger shifts are read as 14

struct SynOptions {
    uint16_t mss = 0;                 // 0: absent
    uint8_t wscale = kNoWindowScale;  // 0-14, or kNoWindowScale
    bool sack_permitted = false;
    bool timestamps = false;
    uint32_t ts_val = 0;  // host order, when timestamps
    uint32_t ts_ecr = 0;
};

// What a SYN proxy keeps of a client's SYN (dataplane/answer/proxy_cookie.h carries it in 8
// bits). The MSS is rounded down to one of eight classes, since a smaller segment is always
// safe; what is lost: a client MSS above 1460 (jumbo frames) is carried as 1460, and one
// between classes as the class below. One below 536, which no real stack sends, is carried
// as 536, as Linux's SYN cookies do. The window scale is exact.
//
// The MSS classes, ascending: 536 (RFC 9293's IPv4 default), 1220 (IPv6's minimum, 1280 - 60),
// 1360 and 1400 (tunnels and VPNs), 1432 (IPv6 over PPPoE), 1440 (IPv6 over Ethernet), 1452
// (IPv4 over PPPoE), 1460 (IPv4 over Ethernet).
inline constexpr uint16_t kProxyMssClasses[8] = {536, 1220, 1360, 1400, 1432, 1440, 1452, 1460};

// What the client's SYN asked for, as the cookie carries it.
struct ProxiedOptions {
    uint16_t mss = 0;                 // one of kProxyMssClasses
    uint8_t wscale = kNoWindowScale;  // exact, or kNoWindowScale
    bool sack_permitted = false;

    bool operator==(const ProxiedOptions &) const = default;
};

// The MSS a SYN without the option implies (RFC 9293 3.7.1; RFC 8200 5 for IPv6's 1280 - 60).
inline uint16_t default_mss(uint8_t family) {
    return family == 6 ? 1220 : 536;
}

inline uint8_t proxy_mss_class(uint16_t mss) {
    uint8_t c = 0;
    while (c + 1 < 8 && kProxyMssClasses[c + 1] <= mss) ++c;
    return c;
}

// The options the cookie keeps of a client's SYN of this family.
inline ProxiedOptions proxied_options(const SynOptions &syn, uint8_t family) {
    const uint16_t mss = syn.mss != 0 ? syn.mss : default_mss(family);
    return {kProxyMssClasses[proxy_mss_class(mss)], syn.wscale, syn.sack_permitted};
}

inline constexpr uint32_t kTcpHeaderMinBytes = 20;

// The length of the TCP header at tcp from its data offset, or 0 when it is under 20 bytes or
// runs past the tcp_len bytes present.
inline uint32_t tcp_header_len(const uint8_t *tcp, uint32_t tcp_len) {
    if (tcp_len < kTcpHeaderMinBytes) return 0;
    const uint32_t len = static_cast<uint32_t>(tcp[kTcpDataOffsetOffset] >> 4) * 4;
    return len < kTcpHeaderMinBytes || len > tcp_len ? 0 : len;
}

// Walks the options of a TCP header of header_len bytes (tcp_header_len), up to End: calls
// visit(kind, at, len) for each but NOP, at being where its kind byte is and len its length
// byte. False when an option's length is under 2 or runs past the header, or visit returns
// false; the walk reads only the header's bytes, whatever they are.
template <class F>
bool walk_tcp_options(const uint8_t *tcp, uint32_t header_len, F &&visit) {
    uint32_t at = kTcpHeaderMinBytes;
    while (at < header_len) {
        const uint8_t kind = tcp[at];
        if (kind == kTcpOptionEnd) return true;
        if (kind == kTcpOptionNop) {
            ++at;
            continue;
        }
        if (at + 2 > header_len) return false;
        const uint8_t len = tcp[at + 1];
        if (len < 2 || at + len > header_len || !visit(kind, at, len)) return false;
        at += len;
    }
    return true;
}

// Reads the options of the TCP header at tcp, of which tcp_len bytes (header and payload) are
// present. False when the header's data offset or an option does not fit, or a known option
// has the wrong length.
bool read_syn_options(const uint8_t *tcp, uint32_t tcp_len, SynOptions *out);

}  // namespace floodgate
