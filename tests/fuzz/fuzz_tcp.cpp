// syn-proxy's readers and writers of TCP headers on any bytes: the SYN options reader
// (dataplane/core/tcp_options.h) and the segment rewrite (dataplane/core/tcp_translate.h), on an
// exact-size copy (ASan sees any read past it). The input is a TCP header and payload; its last
// 10 bytes, when there are that many, choose the rewrite.
// - The reader's answer keeps its promises: a window scale of at most 14, or none.
// - A rewrite that is refused changes nothing. One that is done keeps the one's complement sum
//   of the segment's words (checksum field included) as it was, which is what an incremental
//   checksum update must do, checked without the code under test; and the inverse rewrite gives
//   back the sequence number, acknowledgment and SACK edges exactly.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

#include "dataplane/core/tcp_options.h"
#include "dataplane/core/tcp_translate.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

// The 16-bit one's complement sum of n bytes (odd tail padded with zero), folded.
uint16_t ones_sum(const uint8_t *p, size_t n) {
    uint32_t s = 0;
    for (size_t i = 0; i + 1 < n; i += 2) s += static_cast<uint32_t>(p[i] << 8 | p[i + 1]);
    if (n % 2 != 0) s += static_cast<uint32_t>(p[n - 1] << 8);
    while (s > 0xffff) s = (s & 0xffff) + (s >> 16);
    return static_cast<uint16_t>(s);
}

// 0 and 0xffff are the same number in one's complement.
bool same_sum(uint16_t a, uint16_t b) {
    return a == b || (a == 0 && b == 0xffff) || (a == 0xffff && b == 0);
}

uint32_t be32(const uint8_t *p) {
    return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3];
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 65535) return 0;
    const auto len = static_cast<uint32_t>(size);
    auto tcp = std::make_unique<uint8_t[]>(size);  // exact: ASan sees a read one past it
    if (size != 0) std::memcpy(tcp.get(), data, size);

    floodgate::SynOptions o;
    if (floodgate::read_syn_options(tcp.get(), len, &o))
        FUZZ_CHECK(o.wscale <= floodgate::kMaxWindowScale || o.wscale == floodgate::kNoWindowScale);
    FUZZ_CHECK(size == 0 || std::memcmp(tcp.get(), data, size) == 0);  // reading only

    floodgate::SegmentRewrite r;
    if (size >= 10) {
        r.seq_add = be32(data + size - 10);
        r.ack_sub = be32(data + size - 6);
        r.shift_in = data[size - 2] % 15;
        r.shift_out = data[size - 1] % 15;
    }
    const uint16_t before = ones_sum(tcp.get(), size);
    if (!floodgate::rewrite_segment(tcp.get(), len, r)) {
        FUZZ_CHECK(size == 0 || std::memcmp(tcp.get(), data, size) == 0);
        return 0;
    }
    FUZZ_CHECK(same_sum(ones_sum(tcp.get(), size), before));
    // The inverse, without the window (rescaling rounds): the numbers come back exactly.
    floodgate::SegmentRewrite back{0u - r.seq_add, 0u - r.ack_sub, 0, 0};
    FUZZ_CHECK(floodgate::rewrite_segment(tcp.get(), len, back));
    FUZZ_CHECK(std::memcmp(tcp.get() + 4, data + 4, 8) == 0);
    const uint32_t header = static_cast<uint32_t>(data[12] >> 4) * 4;
    FUZZ_CHECK(std::memcmp(tcp.get() + 20, data + 20, header - 20) == 0);  // SACK edges
    FUZZ_CHECK(same_sum(ones_sum(tcp.get(), size), before));
    return 0;
}
