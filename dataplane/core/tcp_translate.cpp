#include "dataplane/core/tcp_translate.h"

namespace floodgate {

namespace {
constexpr uint8_t kOptionEnd = 0;
constexpr uint8_t kOptionNop = 1;
constexpr uint8_t kOptionSack = 5;
constexpr uint8_t kFlagAck = 0x10;
constexpr uint32_t kTcpHeaderMin = 20;

uint16_t get16(const uint8_t *p) {
    return static_cast<uint16_t>(p[0] << 8 | p[1]);
}
uint32_t get32(const uint8_t *p) {
    return uint32_t{get16(p)} << 16 | get16(p + 2);
}

// Writes n bytes of v (big-endian, n <= 4) at tcp + at and updates the checksum (at tcp + 16)
// by RFC 1624 eqn. 3 over the 16-bit words that hold them: a field at an odd offset (a SACK
// option without NOPs before it) spans three words, not two.
void replace(uint8_t *tcp, uint32_t at, uint32_t v, unsigned n) {
    const uint32_t from = at & ~1u, to = (at + n + 1) & ~1u;
    uint32_t sum = static_cast<uint16_t>(~get16(tcp + 16));
    for (uint32_t i = from; i < to; i += 2) sum += static_cast<uint16_t>(~get16(tcp + i));
    for (unsigned b = 0; b < n; ++b) tcp[at + b] = static_cast<uint8_t>(v >> (8 * (n - 1 - b)));
    for (uint32_t i = from; i < to; i += 2) sum += get16(tcp + i);
    while (sum > 0xffff) sum = (sum & 0xffff) + (sum >> 16);
    const auto check = static_cast<uint16_t>(~sum);
    tcp[16] = static_cast<uint8_t>(check >> 8);
    tcp[17] = static_cast<uint8_t>(check);
}

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

    if (r.seq_add != 0) replace(tcp, 4, get32(tcp + 4) + r.seq_add, 4);
    if (has_ack && r.ack_sub != 0) {
        replace(tcp, 8, get32(tcp + 8) - r.ack_sub, 4);
        const auto sack_at = static_cast<uint32_t>(sack - tcp);
        for (unsigned e = 0; e < 2 * blocks; ++e)
            replace(tcp, sack_at + 4 * e, get32(sack + 4 * e) - r.ack_sub, 4);
    }
    if (r.shift_in != r.shift_out) {
        const uint16_t w = get16(tcp + 14);
        const uint16_t w2 = rescale_window(w, r.shift_in, r.shift_out);
        if (w2 != w) replace(tcp, 14, w2, 2);
    }
    return true;
}

}  // namespace floodgate
