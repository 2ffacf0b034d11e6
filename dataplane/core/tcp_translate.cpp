#include "dataplane/core/tcp_translate.h"

namespace floodgate {

namespace {
constexpr uint8_t kOptionEnd = 0;
constexpr uint8_t kOptionNop = 1;
constexpr uint8_t kOptionSack = 5;
constexpr uint8_t kFlagAck = 0x10;
constexpr uint32_t kTcpHeaderMin = 20;

// Where the SACK option's blocks are (RFC 2018 3: 8 bytes each), or nullptr with *ok false when
// the options are malformed.
uint8_t *find_sack(uint8_t *tcp, uint32_t header_len, unsigned *blocks, bool *ok) {
    *ok = true;
    uint32_t at = kTcpHeaderMin;
    while (at < header_len) {
        const uint8_t kind = tcp[at];
        if (kind == kOptionEnd) break;
        if (kind == kOptionNop) {
            ++at;
            continue;
        }
        if (at + 2 > header_len) break;
        const uint8_t len = tcp[at + 1];
        if (len < 2 || at + len > header_len) {
            *ok = false;
            return nullptr;
        }
        if (kind == kOptionSack) {
            if ((len - 2) % 8 != 0) {
                *ok = false;
                return nullptr;
            }
            *blocks = (len - 2u) / 8;
            return tcp + at + 2;
        }
        at += len;
    }
    if (at < header_len && tcp[at] != kOptionEnd) *ok = false;
    return nullptr;
}
}  // namespace

bool rewrite_segment(uint8_t *tcp, uint32_t tcp_len, const SegmentRewrite &r) {
    if (tcp_len < kTcpHeaderMin) return false;
    const uint32_t header_len = static_cast<uint32_t>(tcp[12] >> 4) * 4;
    if (header_len < kTcpHeaderMin || header_len > tcp_len) return false;
    const bool has_ack = (tcp[13] & kFlagAck) != 0;
    unsigned blocks = 0;
    bool ok = true;
    uint8_t *sack =
        (has_ack && r.ack_sub != 0) ? find_sack(tcp, header_len, &blocks, &ok) : nullptr;
    if (!ok) return false;

    uint8_t *check = tcp + 16;
    if (r.seq_add != 0) detail::replace32(tcp + 4, detail::get32(tcp + 4) + r.seq_add, check);
    if (has_ack && r.ack_sub != 0) {
        detail::replace32(tcp + 8, detail::get32(tcp + 8) - r.ack_sub, check);
        for (unsigned b = 0; b < 2 * blocks; ++b) {
            uint8_t *edge = sack + 4 * b;
            detail::replace32(edge, detail::get32(edge) - r.ack_sub, check);
        }
    }
    if (r.shift_in != r.shift_out) {
        const uint16_t w = detail::get16(tcp + 14);
        const uint16_t w2 = rescale_window(w, r.shift_in, r.shift_out);
        if (w2 != w) detail::replace16(tcp + 14, w2, check);
    }
    return true;
}

}  // namespace floodgate
