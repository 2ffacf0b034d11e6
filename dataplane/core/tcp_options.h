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

// Reads the options of the TCP header at tcp, of which tcp_len bytes (header and payload) are
// present. False when the header's data offset or an option does not fit, or a known option
// has the wrong length.
bool read_syn_options(const uint8_t *tcp, uint32_t tcp_len, SynOptions *out);

}  // namespace floodgate
