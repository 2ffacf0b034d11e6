// parse_packet (dataplane/core/parse.h) on any frame. Besides not crashing, the result must keep
// the promises PacketInfo makes to the pipeline, and a capture cut short may change the result
// only to capture_truncated: the input is the frame as captured and as long on the wire, and
// the parse is repeated with a captured length chosen by the first two bytes (the destination
// MAC address, which the parser never reads, so the fuzzer varies the cut for free).
// Steering's cheaper reading of the same frame (frame_address, dataplane/core/steering.h) reads
// only captured bytes, and wherever the parser found an IP packet it finds the same addresses.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "dataplane/api/protocols.h"
#include "dataplane/core/parse.h"
#include "dataplane/core/steering.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using floodgate::MalformedReason;
using floodgate::PacketInfo;
using floodgate::ParseStatus;

bool all_zero(const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; ++i)
        if (p[i] != 0) return false;
    return true;
}

void check(ParseStatus s, const PacketInfo &info, uint32_t frame_len, uint32_t captured_len) {
    FUZZ_CHECK(s == ParseStatus::ip || s == ParseStatus::non_ip || s == ParseStatus::malformed);
    FUZZ_CHECK((s == ParseStatus::malformed) == (info.malformed != MalformedReason::none));
    FUZZ_CHECK(static_cast<unsigned>(info.malformed) <
               static_cast<unsigned>(MalformedReason::count));
    FUZZ_CHECK(info.vlan_tags <= floodgate::kMaxVlanTags);
    FUZZ_CHECK(info.l3_offset <= frame_len);
    // A family only for a packet the pipeline will judge as IP.
    FUZZ_CHECK(s == ParseStatus::ip ? info.family == 4 || info.family == 6 : info.family == 0);
    if (s != ParseStatus::malformed) FUZZ_CHECK(info.l3_offset == 14 + 4 * info.vlan_tags);
    if (s == ParseStatus::ip) {
        // The IP header the addresses came from was within the captured bytes.
        FUZZ_CHECK(info.l3_offset + (info.family == 4 ? 20u : 40u) <= captured_len);
        if (info.family == 4) FUZZ_CHECK(all_zero(info.src + 4, 12) && all_zero(info.dst + 4, 12));
    } else {
        FUZZ_CHECK(!info.has_l4);
    }
    if (s == ParseStatus::non_ip)
        FUZZ_CHECK(info.l4_proto == 0 && !info.fragment && all_zero(info.src, 16) &&
                   all_zero(info.dst, 16));
    // Ports, flags and ICMP type only from an L4 header that was read, of the right protocol.
    const bool ports = info.has_l4 && (info.l4_proto == floodgate::kProtoTcp ||
                                       info.l4_proto == floodgate::kProtoUdp);
    if (!ports) FUZZ_CHECK(info.src_port == 0 && info.dst_port == 0);
    if (!(info.has_l4 && info.l4_proto == floodgate::kProtoTcp)) FUZZ_CHECK(info.tcp_flags == 0);
    if (!(info.has_l4 &&
          (info.l4_proto == floodgate::kProtoIcmp || info.l4_proto == floodgate::kProtoIcmpv6)))
        FUZZ_CHECK(info.icmp_type == 0);
    if (info.has_l4)
        FUZZ_CHECK(info.l4_proto == floodgate::kProtoTcp || info.l4_proto == floodgate::kProtoUdp ||
                   info.l4_proto == floodgate::kProtoIcmp ||
                   info.l4_proto == floodgate::kProtoIcmpv6);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > UINT32_MAX) return 0;
    const auto len = static_cast<uint32_t>(size);
    // Poisoned, as a PacketInfo reused from the previous burst is: every field the parser
    // promises must be written.
    PacketInfo whole, cut;
    std::memset(&whole, 0xa5, sizeof whole);
    std::memset(&cut, 0xa5, sizeof cut);

    const ParseStatus s = floodgate::parse_packet(data, len, &whole);
    check(s, whole, len, len);

    const uint32_t captured = size >= 2 ? (uint32_t{data[0]} << 8 | data[1]) % (len + 1) : 0;
    const ParseStatus sc = floodgate::parse_packet(data, len, &cut, captured);
    check(sc, cut, len, captured);
    if (!(sc == ParseStatus::malformed && cut.malformed == MalformedReason::capture_truncated)) {
        FUZZ_CHECK(sc == s);
        FUZZ_CHECK(std::memcmp(&whole, &cut, sizeof whole) == 0);
    }

    floodgate::FrameAddress src, dst;
    const bool read = floodgate::frame_address(data, captured, false, &src);
    FUZZ_CHECK(read == floodgate::frame_address(data, captured, true, &dst));
    if (read) FUZZ_CHECK((src.family == 4 || src.family == 6) && dst.family == src.family);
    if (sc == ParseStatus::ip) {
        FUZZ_CHECK(read && src.family == cut.family);
        FUZZ_CHECK(std::memcmp(src.addr, cut.src, 16) == 0 &&
                   std::memcmp(dst.addr, cut.dst, 16) == 0);
    }
    return 0;
}
