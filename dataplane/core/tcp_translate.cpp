#include "dataplane/core/tcp_translate.h"

#include "dataplane/core/load_be.h"
#include "dataplane/core/tcp_options.h"

namespace floodgate {

namespace {

// Writes n bytes of v (big-endian, n <= 4) at tcp + at and updates the checksum by RFC 1624 eqn. 3
// over the 16-bit words that hold them: a field at an odd offset (a SACK option without NOPs before
// it) spans three words, not two.
void replace(uint8_t *tcp, uint32_t at, uint32_t v, unsigned n) {
    const uint32_t from = at & ~1u, to = (at + n + 1) & ~1u;
    uint32_t sum = static_cast<uint16_t>(~load_be16(tcp + kTcpChecksumOffset));
    for (uint32_t i = from; i < to; i += 2) sum += static_cast<uint16_t>(~load_be16(tcp + i));
    for (unsigned b = 0; b < n; ++b) tcp[at + b] = static_cast<uint8_t>(v >> (8 * (n - 1 - b)));
    for (uint32_t i = from; i < to; i += 2) sum += load_be16(tcp + i);
    while (sum > 0xffff) sum = (sum & 0xffff) + (sum >> 16);
    const auto check = static_cast<uint16_t>(~sum);
    tcp[kTcpChecksumOffset] = static_cast<uint8_t>(check >> 8);
    tcp[kTcpChecksumOffset + 1] = static_cast<uint8_t>(check);
}

}  // namespace

bool rewrite_segment(uint8_t *tcp, uint32_t tcp_len, const SegmentRewrite &r) {
    const uint32_t header_len = tcp_header_len(tcp, tcp_len);
    if (header_len == 0) return false;
    const bool has_ack = (tcp[kTcpFlagsOffset] & kTcpAck) != 0;
    // Where the first SACK option's blocks start (RFC 2018 3: 8 bytes each), 0 without one.
    uint32_t sack_at = 0;
    unsigned blocks = 0;
    const bool ok = walk_tcp_options(tcp, header_len, [&](uint8_t kind, uint32_t at, uint8_t len) {
        if (kind != kTcpOptionSack || sack_at != 0) return true;
        if ((len - 2) % 8 != 0) return false;
        sack_at = at + 2;
        blocks = (len - 2u) / 8;
        return true;
    });
    if (!ok) return false;

    if (r.seq_add != 0) replace(tcp, kTcpSeqOffset, load_be32(tcp + kTcpSeqOffset) + r.seq_add, 4);
    if (has_ack && r.ack_sub != 0) {
        replace(tcp, kTcpAckOffset, load_be32(tcp + kTcpAckOffset) - r.ack_sub, 4);
        for (unsigned e = 0; e < 2 * blocks; ++e)
            replace(tcp, sack_at + 4 * e, load_be32(tcp + sack_at + 4 * e) - r.ack_sub, 4);
    }
    // A SYN's window is never scaled (RFC 7323 2.2).
    if (r.shift_in != r.shift_out && (tcp[kTcpFlagsOffset] & kTcpSyn) == 0) {
        const uint16_t w = load_be16(tcp + kTcpWindowOffset);
        const uint16_t w2 = rescale_window(w, r.shift_in, r.shift_out);
        if (w2 != w) replace(tcp, kTcpWindowOffset, w2, 2);
    }
    return true;
}

}  // namespace floodgate
