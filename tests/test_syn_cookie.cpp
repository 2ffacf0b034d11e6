// syn-auth's cookie (dataplane/answer/syn_cookie.h): SipHash-2-4 against the reference vectors of
// its authors (key 00..0f, message 00..(8n-1)), and a cookie's dependence on every field it binds.
#include <gtest/gtest.h>

#include <cstring>

#include "dataplane/answer/syn_cookie.h"
#include "tests/cookie_attempt.h"

namespace floodgate {
namespace {

constexpr CookieKey kReferenceKey{0x0706050403020100ull, 0x0f0e0d0c0b0a0908ull};

TEST(SipHash, MatchesTheReferenceVectors) {
    // vectors_sip64[0], [8] and [16] of the reference implementation, read little-endian.
    const uint64_t message[2] = {0x0706050403020100ull, 0x0f0e0d0c0b0a0908ull};
    EXPECT_EQ(siphash24(kReferenceKey, message, 0), 0x726fdb47dd0e0e31ull);
    EXPECT_EQ(siphash24(kReferenceKey, message, 1), 0x93f5f5799a932462ull);
    EXPECT_EQ(siphash24(kReferenceKey, message, 2), 0x3f2acc7f57c29bdbull);
}

PacketInfo attempt(uint8_t family) {
    return test::cookie_attempt(family, 80);
}

// Each field changed alone changes the cookie (for this key and tuple: a 32-bit PRF output
// collides with probability 2^-32 per pair, so a fixed case that collides would be a bug).
TEST(SynCookie, BindsEveryFieldOfTheAttempt) {
    const CookieKey key{0x243f6a8885a308d3ull, 0x13198a2e03707344ull};
    for (uint8_t family : {4, 6}) {
        SCOPED_TRACE(family);
        const PacketInfo p = attempt(family);
        const uint32_t base = syn_cookie(key, p, 5);
        const unsigned addr_bytes = family == 4 ? 4 : 16;
        for (unsigned i = 0; i < addr_bytes; ++i) {
            PacketInfo q = p;
            q.src[i] ^= 1;
            EXPECT_NE(syn_cookie(key, q, 5), base) << "src byte " << i;
            q = p;
            q.dst[i] ^= 1;
            EXPECT_NE(syn_cookie(key, q, 5), base) << "dst byte " << i;
        }
        PacketInfo q = p;
        q.src_port ^= 1;
        EXPECT_NE(syn_cookie(key, q, 5), base);
        q = p;
        q.dst_port ^= 1;
        EXPECT_NE(syn_cookie(key, q, 5), base);
        q = p;
        std::swap(q.src_port, q.dst_port);  // the answer's direction is another attempt
        EXPECT_NE(syn_cookie(key, q, 5), base);
        EXPECT_NE(syn_cookie(key, p, 6), base);
        EXPECT_NE(syn_cookie(key, p, (uint64_t{1} << 28) - 1), base);  // the last slot
        EXPECT_NE(syn_cookie(CookieKey{key.k0 ^ 1, key.k1}, p, 5), base);
    }
    // The same addresses' bytes read as IPv4 and as IPv6 (zero-padded) are two attempts.
    PacketInfo v4 = attempt(4), v6 = attempt(4);
    v6.family = 6;
    EXPECT_NE(syn_cookie(key, v4, 5), syn_cookie(key, v6, 5));
}

TEST(SynCookie, IsValidForTheCurrentAndThePreviousSlotOnly) {
    const CookieKey key{1, 2};
    const PacketInfo p = attempt(4);
    const uint64_t slot_ns = uint64_t{1} << kCookieSlotShift;
    const uint32_t cookie = syn_cookie(key, p, 3);
    EXPECT_FALSE(cookie_valid(key, p, cookie, 2 * slot_ns + slot_ns - 1));  // slot 2
    EXPECT_TRUE(cookie_valid(key, p, cookie, 3 * slot_ns));                 // slot 3
    EXPECT_TRUE(cookie_valid(key, p, cookie, 4 * slot_ns + slot_ns - 1));   // slot 4
    EXPECT_FALSE(cookie_valid(key, p, cookie, 5 * slot_ns));                // slot 5
    EXPECT_FALSE(cookie_valid(key, p, cookie + 1, 3 * slot_ns));
}

}  // namespace
}  // namespace floodgate
