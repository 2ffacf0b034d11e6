// The answer builders on any frame: every truncation of valid frames (with and without their
// lengths fitted to the cut), mutated valid frames and random IP frames, each planned and built
// for every kind on an exact-size heap copy, so that ASan sees any access out of bounds. A frame
// refused says why and costs nothing; an answer is no longer than the frame, and parses back as
// the packet it claims to be with checksums that verify.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <random>
#include <vector>

#include "dataplane/answer/answer.h"
#include "dataplane/core/parse.h"
#include "tests/answer_frames.h"
#include "tests/pkt_builder.h"

namespace floodgate::answer_test {
namespace {

// ---- Any frame ------------------------------------------------------------------------------

// Every kind on one frame of len bytes (an exact-size heap copy): a plan that is refused says
// why and costs nothing; an answer is no longer than the frame, parses as the packet it claims
// to be (from the original destination back to its source) and its checksums verify.
// *built counts the answers built.
void answer_any(const uint8_t *data, size_t size, uint32_t cookie, uint64_t *built) {
    const auto len = static_cast<uint32_t>(size);
    const auto frame = heap_copy(data, size);
    PacketInfo info;
    if (parse_packet(frame.get(), len, &info) != ParseStatus::ip) return;
    for (const AnswerKind kind : kKinds) {
        AnswerPlan plan = plan_answer(kind, frame.get(), len, info);
        ASSERT_EQ(plan.ok(), plan.why == NoAnswer::none) << answer_kind_name(kind);
        ASSERT_LT(static_cast<unsigned>(plan.why), static_cast<unsigned>(NoAnswer::count));
        if (!plan.ok()) {
            ASSERT_EQ(plan.answer_len, 0u);
            continue;
        }
        ASSERT_EQ(plan.kind, kind);
        ASSERT_LE(plan.answer_len, len) << answer_kind_name(kind);
        plan.cookie = cookie;
        const auto out = heap_copy(frame.get(), size);
        const uint32_t n = build_answer(plan, info, out.get(), len);
        ASSERT_EQ(n, plan.answer_len) << answer_kind_name(kind);
        ASSERT_EQ(std::memcmp(out.get() + n, data + n, len - n), 0) << "written past the answer";
        ++*built;

        const Frame a(out.get(), out.get() + n);
        PacketInfo back;
        ASSERT_EQ(parse_packet(a.data(), n, &back), ParseStatus::ip) << answer_kind_name(kind);
        ASSERT_EQ(back.family, info.family);
        ASSERT_TRUE(back.has_l4);
        ASSERT_EQ(back.l3_offset, info.l3_offset);
        ASSERT_EQ(std::memcmp(back.src, info.dst, 16), 0);
        ASSERT_EQ(std::memcmp(back.dst, info.src, 16), 0);
        if (kind != AnswerKind::icmp_unreachable) {
            ASSERT_EQ(back.src_port, info.dst_port);
            ASSERT_EQ(back.dst_port, info.src_port);
        }
        ASSERT_EQ(std::memcmp(a.data(), data + 6, 6), 0) << "Ethernet addresses swapped";
        ASSERT_EQ(std::memcmp(a.data() + 6, data, 6), 0);
        ASSERT_EQ(std::memcmp(a.data() + 12, data + 12, info.l3_offset - 12), 0) << "tags kept";
        const uint32_t ip_end = uint32_t{back.l4_offset} + back.l4_len;
        ASSERT_EQ(n, std::max(ip_end, std::min(60u, len))) << "padded to 60, no further";
        for (uint32_t i = ip_end; i < n; ++i) ASSERT_EQ(a[i], 0) << "padding at " << i;
        if (back.family == 4) {
            ASSERT_EQ(ones_sum(&a[back.l3_offset], 20), 0xffff);
        }
        ASSERT_EQ(
            l4_sum(a, back.l3_offset, back.l4_offset, back.l4_len, back.family, back.l4_proto),
            0xffff)
            << answer_kind_name(kind);
    }
}

std::vector<Frame> seed_frames() {
    std::vector<Frame> seeds;
    for (const Net &n : kNets) {
        for (const AnswerKind kind : kKinds) seeds.push_back(valid_frame(kind, n));
        seeds.push_back(tcp_frame(n, kSyn, 1, 0, 0));
        seeds.push_back(udp_frame(n, 1400));
        seeds.push_back(build(n, base(n).udp(5000, 9999).payload(30).trailing(80)));
        DnsMsg root;
        root.name = {0};
        root.rest = {};
        root.arcount = 0;
        seeds.push_back(dns_frame(n, root));
    }
    return seeds;
}

// The frame cut to its first len bytes with its IP length (and the UDP length) made to end
// there, so that the cut reaches the planners, not only the parser: a question cut short, a
// quote with no room. The lengths are only rewritten where their fields are within the cut.
Frame cut_to_fit(const Frame &f, size_t len, const PacketInfo &info) {
    Frame c(f.begin(), f.begin() + static_cast<ptrdiff_t>(len));
    const size_t l3 = info.l3_offset;
    if (info.family == 4 && len >= l3 + 20) put16(&c, l3 + 2, static_cast<uint16_t>(len - l3));
    if (info.family == 6 && len >= l3 + 40) put16(&c, l3 + 4, static_cast<uint16_t>(len - l3 - 40));
    if (info.l4_proto == kProtoUdp && info.l4_offset != 0 && len >= info.l4_offset + 8u)
        put16(&c, info.l4_offset + 4, static_cast<uint16_t>(len - info.l4_offset));
    return c;
}

TEST(AnswerFuzz, EveryTruncationOfValidFrames) {
    uint64_t built = 0;
    for (const Frame &f : seed_frames()) {
        PacketInfo info;
        ASSERT_EQ(parse_packet(f.data(), static_cast<uint32_t>(f.size()), &info), ParseStatus::ip);
        for (size_t len = 0; len <= f.size(); ++len) {
            ASSERT_NO_FATAL_FAILURE(answer_any(f.data(), len, 0x01020304, &built))
                << "cut to " << len;
            const Frame fitted = cut_to_fit(f, len, info);
            ASSERT_NO_FATAL_FAILURE(answer_any(fitted.data(), fitted.size(), 7, &built))
                << "cut to " << len << ", lengths fitted";
        }
    }
    EXPECT_GE(built, 10'000u);  // the fitted cuts are answered, as far as each kind can
}

TEST(AnswerFuzz, MutatedValidFrames) {
    uint64_t built = 0;
    const std::vector<Frame> seeds = seed_frames();
    std::mt19937_64 rng(20261201);
    for (int i = 0; i < 60'000; ++i) {
        Frame f = seeds[rng() % seeds.size()];
        for (int flips = 1 + static_cast<int>(rng() % 4); flips > 0; --flips)
            f[rng() % f.size()] = static_cast<uint8_t>(rng());
        if (rng() % 4 == 0) f.resize(rng() % (f.size() + 1));
        ASSERT_NO_FATAL_FAILURE(
            answer_any(f.data(), f.size(), static_cast<uint32_t>(rng()), &built))
            << "mutation " << i;
    }
    EXPECT_GE(built, 10'000u);
}

TEST(AnswerFuzz, RandomIpFrames) {
    uint64_t built = 0;
    std::mt19937_64 rng(99);
    for (int i = 0; i < 60'000; ++i) {
        Frame f(14 + rng() % 200);
        for (uint8_t &b : f) b = static_cast<uint8_t>(rng());
        const bool v6 = rng() % 2 == 0;
        f[12] = v6 ? 0x86 : 0x08;
        f[13] = v6 ? 0xdd : 0x00;
        if (f.size() > 14) f[14] = v6 ? 0x60 : 0x45;
        if (f.size() >= 34 && !v6) {  // a total length that fits, so that parsing gets to L4
            put16(&f, 16, static_cast<uint16_t>(f.size() - 14));
            put16(&f, 20, 0);  // not a fragment
            f[23] = std::array<uint8_t, 3>{kProtoTcp, kProtoUdp, kProtoIcmp}[rng() % 3];
        }
        if (f.size() > 54 && v6) {
            put16(&f, 18, static_cast<uint16_t>(f.size() - 54));
            f[20] = std::array<uint8_t, 3>{kProtoTcp, kProtoUdp, kProtoIcmpv6}[rng() % 3];
        }
        ASSERT_NO_FATAL_FAILURE(
            answer_any(f.data(), f.size(), static_cast<uint32_t>(rng()), &built))
            << "random frame " << i;
    }
    EXPECT_GE(built, 1'000u);
}

}  // namespace
}  // namespace floodgate::answer_test
