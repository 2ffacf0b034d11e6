#include "dataplane/core/payload_scan.h"

#include <algorithm>

#include "dataplane/api/protocols.h"

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

#if FG_HAVE_HYPERSCAN

namespace {

int on_match(unsigned, unsigned long long, unsigned long long, unsigned, void *matched) {
    *static_cast<bool *>(matched) = true;
    return 1;  // one is enough: stop the scan
}

}  // namespace

bool payload_matches(const hs_database *db, uint32_t offset, uint32_t depth, const uint8_t *frame,
                     uint32_t captured, const PacketInfo &p, hs_scratch *scratch) {
    const PayloadSpan s = l4_payload(frame, captured, p);
    if (s.end <= s.start || s.end - s.start <= offset) return false;
    const uint32_t from = s.start + offset;
    const uint32_t len = depth != 0 ? std::min(depth, s.end - from) : s.end - from;
    bool matched = false;
    hs_scan(db, reinterpret_cast<const char *>(frame + from), len, 0, scratch, on_match, &matched);
    return matched;
}

#else

bool payload_matches(const hs_database *, uint32_t, uint32_t, const uint8_t *, uint32_t,
                     const PacketInfo &, hs_scratch *) {
    return false;  // no payload rule loads without a pattern engine
}

#endif

}  // namespace floodgate
