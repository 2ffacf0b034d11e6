// syn-proxy's filter of the connections it answered lately (dataplane/core/answered_filter.h):
// never a false negative for two generations, forgotten after them, and a connection not
// answered mostly absent.
#include <gtest/gtest.h>

#include "dataplane/core/answered_filter.h"

namespace floodgate {
namespace {

constexpr uint64_t kGeneration = uint64_t{1} << AnsweredFilter::kGenerationShift;

PacketInfo connection(uint32_t n) {
    PacketInfo p{};
    p.family = 4;
    p.src[0] = 198, p.src[1] = 18, p.src[2] = static_cast<uint8_t>(n >> 8);
    p.src[3] = static_cast<uint8_t>(n);
    p.dst[0] = 198, p.dst[1] = 19, p.dst[3] = 1;
    p.src_port = static_cast<uint16_t>(1024 + n % 60000);
    p.dst_port = 443;
    return p;
}

TEST(AnsweredFilter, FoundForTwoGenerationsThenForgotten) {
    AnsweredFilter f;
    const uint64_t t0 = 40 * kGeneration + 5;
    for (uint32_t n = 0; n < 10000; ++n) f.add(connection(n), t0);
    for (uint32_t n = 0; n < 10000; ++n) {
        ASSERT_TRUE(f.may_contain(connection(n), t0)) << n;
        ASSERT_TRUE(f.may_contain(connection(n), t0 + kGeneration)) << n;
    }
    unsigned found = 0;
    for (uint32_t n = 0; n < 10000; ++n)
        found += f.may_contain(connection(n), t0 + 2 * kGeneration);
    EXPECT_EQ(found, 0u) << "two generations on, both bitmaps were cleared";
}

TEST(AnsweredFilter, AConnectionNotAnsweredIsMostlyAbsent) {
    AnsweredFilter f;
    const uint64_t t0 = 7 * kGeneration;
    for (uint32_t n = 0; n < 10000; ++n) f.add(connection(n), t0);
    unsigned found = 0;
    for (uint32_t n = 10000; n < 60000; ++n) found += f.may_contain(connection(n), t0);
    // 10,000 bits of 2^20 set: about 1 % of the others collide.
    EXPECT_LT(found, 50000u / 50) << found;
}

TEST(AnsweredFilter, AJumpOverSeveralGenerationsForgetsEverything) {
    AnsweredFilter f;
    f.add(connection(1), 3 * kGeneration);
    EXPECT_TRUE(f.may_contain(connection(1), 3 * kGeneration + 1));
    EXPECT_FALSE(f.may_contain(connection(1), 9 * kGeneration));
    EXPECT_FALSE(f.may_contain(connection(1), 3 * kGeneration)) << "the clock never goes back";
}

TEST(AnsweredFilter, AFloodSetsItAsideUntilItsAnswersAreAllNoted) {
    AnsweredFilter f;
    const uint64_t t0 = 11 * kGeneration;
    for (uint32_t n = 0; n < (1u << 19); ++n) f.add(connection(n), t0);
    EXPECT_TRUE(f.saturated());
    EXPECT_TRUE(f.may_contain(connection(1u << 20), t0)) << "every ACK checked";
    // An answer past the limit sets no bit: it is found all the same a generation later.
    f.add(connection(5), t0 + 1);
    EXPECT_TRUE(f.may_contain(connection(5), t0 + kGeneration + 1));
    // The next generation's answers still count the flood's beside them: not noted either.
    f.add(connection(6), t0 + kGeneration + 2);
    EXPECT_TRUE(f.may_contain(connection(6), t0 + 2 * kGeneration + 1));
    // Quiet from then on: its answers are noted, and once the generations that skipped some
    // are gone, the filter is consulted again.
    f.add(connection(7), t0 + 2 * kGeneration + 2);
    EXPECT_TRUE(f.saturated());
    EXPECT_TRUE(f.may_contain(connection(7), t0 + 3 * kGeneration));
    EXPECT_FALSE(f.saturated());
    EXPECT_FALSE(f.may_contain(connection(6), t0 + 3 * kGeneration));
}

}  // namespace
}  // namespace floodgate
