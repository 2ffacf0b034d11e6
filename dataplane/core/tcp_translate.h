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

namespace detail {
// RFC 1624 eqn. 3 for one 16-bit word, in the byte order the checksum is stored in (network).
inline uint16_t checksum_replace16(uint16_t check, uint16_t old_word, uint16_t new_word) {
    uint32_t sum = static_cast<uint16_t>(~check) +
                   static_cast<uint32_t>(static_cast<uint16_t>(~old_word)) + new_word;
    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    return static_cast<uint16_t>(~sum);
}
inline uint16_t get16(const uint8_t *p) {
    return static_cast<uint16_t>(p[0] << 8 | p[1]);
}
inline void put16(uint8_t *p, uint16_t v) {
    p[0] = static_cast<uint8_t>(v >> 8);
    p[1] = static_cast<uint8_t>(v);
}
// Replaces the 16-bit big-endian word at p, keeping the checksum at check right.
inline void replace16(uint8_t *p, uint16_t v, uint8_t *check) {
    put16(check, checksum_replace16(get16(check), get16(p), v));
    put16(p, v);
}
inline uint32_t get32(const uint8_t *p) {
    return uint32_t{get16(p)} << 16 | get16(p + 2);
}
inline void replace32(uint8_t *p, uint32_t v, uint8_t *check) {
    replace16(p, static_cast<uint16_t>(v >> 16), check);
    replace16(p + 2, static_cast<uint16_t>(v), check);
}
}  // namespace detail

// The window field a receiver told shift_out should see for a sender's field w at shift_in.
inline uint16_t rescale_window(uint16_t w, uint8_t shift_in, uint8_t shift_out) {
    if (shift_in == shift_out || w == 0) return w;
    const uint64_t bytes = uint64_t{w} << shift_in;
    const uint64_t field = bytes >> shift_out;
    if (field == 0) return 1;
    return field > 0xffff ? 0xffff : static_cast<uint16_t>(field);
}

// Rewrites the TCP header at tcp (tcp_len bytes of header and payload present) in place. False,
// with nothing changed, when the header's data offset or options do not fit in tcp_len (the
// caller drops the segment: it cannot be translated).
bool rewrite_segment(uint8_t *tcp, uint32_t tcp_len, const SegmentRewrite &r);

}  // namespace floodgate
