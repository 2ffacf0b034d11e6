// What a SYN proxy changes in each segment of a proxied connection once both handshakes are
// done: the server's sequence space is shifted onto the cookie floodgate gave the client, and
// windows are rescaled where the two sides were told different shifts. Plain functions over a
// TCP header's bytes, with the checksum updated incrementally (RFC 1624 eqn. 3), so a segment
// costs a few loads and stores whatever its length.
//
//   client -> server: ACK = SEG.ACK - delta, each SACK block's edges - delta (they name server
//                     bytes); SEQ unchanged (the server was given the client's own ISN)
//   server -> client: SEQ = SEG.SEQ + delta; ACK and SACK blocks unchanged (client bytes)
//
// delta = the client's view of the server's ISN (the cookie) - the server's real ISN, modulo
// 2^32. Windows: a segment's window field is read with its sender's shift and written with the
// shift its receiver was told (min 65535); a window the rescaling would round to 0 is sent as 1,
// so that a small open window never reads as closed.
#pragma once

#include <cstdint>

namespace floodgate {

// One direction's rewrite. shift_in: the sender's window scale as its peer applies it (0 when
// scaling is off); shift_out: the one the receiver applies to what it gets.
struct SegmentRewrite {
    uint32_t seq_add = 0;  // added to SEQ
    uint32_t ack_sub = 0;  // subtracted from ACK and SACK block edges
    uint8_t shift_in = 0;
    uint8_t shift_out = 0;
};

// The window field a receiver told shift_out should see for a sender's field w at shift_in.
inline uint16_t rescale_window(uint16_t w, uint8_t shift_in, uint8_t shift_out) {
    if (shift_in == shift_out || w == 0) return w;
    const uint64_t bytes = uint64_t{w} << shift_in;
    const uint64_t field = bytes >> shift_out;
    if (field == 0) return 1;
    return field > 0xffff ? 0xffff : static_cast<uint16_t>(field);
}

// Rewrites the TCP header at tcp (tcp_len bytes of header and payload present) in place. False,
// with nothing changed, when the header's data offset does not fit in tcp_len or an option is
// malformed (the caller drops the segment: it cannot be translated). A SYN's window is left as
// it is: it is never scaled.
bool rewrite_segment(uint8_t *tcp, uint32_t tcp_len, const SegmentRewrite &r);

}  // namespace floodgate
