#include "dataplane/core/payload_scan.h"

#include <algorithm>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "dataplane/api/protocols.h"
#include "dataplane/patterns/payload_database.h"

#if FG_HAVE_HYPERSCAN
#include <hs/hs.h>
#endif

namespace floodgate {

PayloadSpan l4_payload(const uint8_t *frame, uint32_t captured, const PacketInfo &p) {
    PayloadSpan s;
    if (!p.has_l4) return s;
    s.end = std::min<uint32_t>(captured, uint32_t{p.l4_offset} + p.l4_len);
    uint32_t header = 0;
    if (p.l4_proto == kProtoTcp) {
        if (uint32_t{p.l4_offset} + 13 > s.end) return {};
        header = (frame[p.l4_offset + 12] >> 4) * 4u;
    } else if (p.l4_proto == kProtoUdp || p.l4_proto == kProtoIcmp || p.l4_proto == kProtoIcmpv6) {
        header = 8;
    }
    s.start = p.l4_offset + header;
    if (s.start > s.end) s.start = s.end;
    return s;
}

uint32_t shortest_pattern(const std::vector<PayloadPattern> &patterns) {
    uint32_t shortest = UINT32_MAX;
    for (const PayloadPattern &p : patterns) {
        std::string labels, why;
        if (p.kind == PayloadPattern::Kind::regex) return 0;
        if (p.kind == PayloadPattern::Kind::dns_suffix && !dns_labels(p.text, &labels, &why))
            return 0;  // refused when compiled; nothing to skip by
        const size_t len = p.kind == PayloadPattern::Kind::literal ? p.text.size() : labels.size();
        shortest = std::min<uint32_t>(shortest, static_cast<uint32_t>(len));
    }
    return shortest == UINT32_MAX ? 0 : shortest;
}

int literal_near_start(const uint8_t *w, uint32_t len, const PayloadLiteral &lit) {
    const uint32_t n = lit.len;
    if (len < n) return 0;
    const uint32_t positions = len - n + 1;
    const auto at = [&](uint32_t i) {
        return w[i] == lit.bytes[0] && w[i + n - 1] == lit.bytes[n - 1] &&
               std::memcmp(w + i + 1, lit.bytes + 1, n - 2) == 0;
    };
#if defined(__SSE2__)
    if (positions >= kLiteralSpan) {
        // Every position whose first and last byte are the literal's, in two loads that stay
        // within the window (the last one ends at byte kLiteralSpan + n - 2 < len).
        const __m128i first = _mm_set1_epi8(static_cast<char>(lit.bytes[0]));
        const __m128i last = _mm_set1_epi8(static_cast<char>(lit.bytes[n - 1]));
        const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i *>(w));
        const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i *>(w + n - 1));
        auto mask = static_cast<unsigned>(
            _mm_movemask_epi8(_mm_and_si128(_mm_cmpeq_epi8(a, first), _mm_cmpeq_epi8(b, last))));
        for (; mask != 0; mask &= mask - 1)
            if (std::memcmp(w + __builtin_ctz(mask) + 1, lit.bytes + 1, n - 2) == 0) return 1;
        return positions == kLiteralSpan ? 0 : -1;
    }
#endif
    const uint32_t here = std::min(positions, kLiteralSpan);
    for (uint32_t i = 0; i < here; ++i)
        if (at(i)) return 1;
    return positions <= kLiteralSpan ? 0 : -1;
}

#if FG_HAVE_HYPERSCAN

namespace {

int on_match(unsigned, unsigned long long, unsigned long long, unsigned, void *matched) {
    *static_cast<bool *>(matched) = true;
    return 1;  // one is enough: stop the scan
}

}  // namespace

bool payload_matches(const hs_database *db, const PayloadLiteral &lit, uint32_t min_len,
                     uint32_t offset, uint32_t depth, const uint8_t *frame, uint32_t captured,
                     const PacketInfo &p, hs_scratch *scratch) {
    const PayloadSpan s = l4_payload(frame, captured, p);
    if (s.end <= s.start || s.end - s.start <= offset) return false;
    const uint32_t from = s.start + offset;
    const uint32_t len = depth != 0 ? std::min(depth, s.end - from) : s.end - from;
    if (len < min_len) return false;  // shorter than every pattern
    if (lit.len != 0) {
        const int near = literal_near_start(frame + from, len, lit);
        if (near >= 0) return near == 1;
    }
    bool matched = false;
    hs_scan(db, reinterpret_cast<const char *>(frame + from), len, 0, scratch, on_match, &matched);
    return matched;
}

#else

bool payload_matches(const hs_database *, const PayloadLiteral &, uint32_t, uint32_t, uint32_t,
                     const uint8_t *, uint32_t, const PacketInfo &, hs_scratch *) {
    return false;  // no payload rule loads without a pattern engine
}

#endif

}  // namespace floodgate
