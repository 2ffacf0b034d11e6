// The answers (dataplane/answer/answer.h) on any frame: parse it, then plan every kind and build
// each answer that is planned, on an exact-size heap copy so that ASan sees any byte past the
// frame. Besides not crashing: a refusal says why and costs nothing; an answer is never longer than
// the frame, is written within its own length only, and parses back as the IP packet it claims
// to be (from the original destination to the original source, ports swapped, tags kept), with
// checksums that verify (summed by tests/answer_bytes.h, not by DPDK's helpers the builders use).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

#include "dataplane/answer/answer.h"
#include "dataplane/api/protocols.h"
#include "dataplane/core/parse.h"
#include "tests/answer_bytes.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using floodgate::AnswerKind;
using floodgate::AnswerPlan;
using floodgate::NoAnswer;
using floodgate::PacketInfo;
using floodgate::ParseStatus;

using floodgate::test::ones_sum;

// The upper-layer checksum, over the pseudo-header too (tests/answer_bytes.h).
bool l4_checksum_ok(const uint8_t *f, const PacketInfo &a) {
    return floodgate::test::l4_sum(f, a.l3_offset, a.l4_offset, a.l4_len, a.family, a.l4_proto) ==
           0xffff;
}

uint8_t answer_proto(AnswerKind kind, uint8_t family) {
    switch (kind) {
        case AnswerKind::dns_truncated:
            return floodgate::kProtoUdp;
        case AnswerKind::icmp_unreachable:
            return family == 4 ? floodgate::kProtoIcmp : floodgate::kProtoIcmpv6;
        default:
            return floodgate::kProtoTcp;
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 65535 + 64) return 0;  // no frame is longer
    const auto len = static_cast<uint32_t>(size);
    auto frame = std::make_unique<uint8_t[]>(size);
    if (size != 0) std::memcpy(frame.get(), data, size);
    PacketInfo info;
    if (floodgate::parse_packet(frame.get(), len, &info) != ParseStatus::ip) return 0;
    const uint32_t cookie = size >= 4 ? uint32_t{data[size - 1]} << 24 | data[size - 2] << 16 |
                                            data[size - 3] << 8 | data[size - 4]
                                      : 0;

    for (unsigned k = 0; k < static_cast<unsigned>(AnswerKind::count); ++k) {
        const auto kind = static_cast<AnswerKind>(k);
        AnswerPlan plan = floodgate::plan_answer(kind, frame.get(), len, info);
        FUZZ_CHECK(std::memcmp(frame.get(), data, size) == 0);  // planning only reads
        FUZZ_CHECK(plan.ok() == (plan.why == NoAnswer::none));
        FUZZ_CHECK(static_cast<unsigned>(plan.why) < static_cast<unsigned>(NoAnswer::count));
        if (!plan.ok()) {
            FUZZ_CHECK(plan.answer_len == 0);
            continue;
        }
        FUZZ_CHECK(plan.kind == kind);
        FUZZ_CHECK(plan.answer_len <= len);
        plan.cookie = cookie;

        auto out = std::make_unique<uint8_t[]>(size);
        std::memcpy(out.get(), data, size);
        const uint32_t n = floodgate::build_answer(plan, info, out.get(), len);
        FUZZ_CHECK(n == plan.answer_len);
        FUZZ_CHECK(std::memcmp(out.get() + n, data + n, len - n) == 0);  // nothing written past

        PacketInfo back;
        FUZZ_CHECK(floodgate::parse_packet(out.get(), n, &back) == ParseStatus::ip);
        FUZZ_CHECK(back.family == info.family && back.has_l4 && !back.fragment);
        FUZZ_CHECK(back.l4_proto == answer_proto(kind, info.family));
        FUZZ_CHECK(back.l3_offset == info.l3_offset && back.vlan_tags == info.vlan_tags);
        FUZZ_CHECK(std::memcmp(back.src, info.dst, 16) == 0);
        FUZZ_CHECK(std::memcmp(back.dst, info.src, 16) == 0);
        FUZZ_CHECK(std::memcmp(out.get(), data + 6, 6) == 0);
        FUZZ_CHECK(std::memcmp(out.get() + 6, data, 6) == 0);
        FUZZ_CHECK(std::memcmp(out.get() + 12, data + 12, info.l3_offset - 12u) == 0);
        if (kind != AnswerKind::icmp_unreachable)
            FUZZ_CHECK(back.src_port == info.dst_port && back.dst_port == info.src_port);
        if (back.family == 4) FUZZ_CHECK(ones_sum(out.get() + back.l3_offset, 20) == 0xffff);
        FUZZ_CHECK(l4_checksum_ok(out.get(), back));
        const uint32_t ip_end = uint32_t{back.l4_offset} + back.l4_len;
        FUZZ_CHECK(n == (ip_end > (len < 60 ? len : 60u) ? ip_end : (len < 60 ? len : 60u)));
        for (uint32_t i = ip_end; i < n; ++i) FUZZ_CHECK(out[i] == 0);
    }
    return 0;
}
