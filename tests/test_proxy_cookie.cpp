// syn-proxy's SYN options reader (dataplane/core/tcp_options.h) and cookie
// (dataplane/answer/proxy_cookie.h): options read from the bytes real stacks send, every
// malformed layout refused, and a cookie that gives back exactly the options it was made with,
// for the current and the previous slot only, and for no other connection.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "dataplane/answer/proxy_cookie.h"
#include "tests/cookie_attempt.h"

namespace floodgate {
namespace {

// A 20-byte TCP header followed by options (padded with End to a multiple of 4).
std::vector<uint8_t> tcp_with_options(std::vector<uint8_t> options) {
    while (options.size() % 4 != 0) options.push_back(0);
    std::vector<uint8_t> tcp(20 + options.size(), 0);
    tcp[12] = static_cast<uint8_t>(tcp.size() / 4 << 4);
    for (size_t i = 0; i < options.size(); ++i) tcp[20 + i] = options[i];
    return tcp;
}

// Linux 6.x's SYN: MSS 1460, SACK-permitted, timestamps, NOP, window scale 7.
const std::vector<uint8_t> kLinuxSyn = {2,    4,    0x05, 0xb4, 4, 2, 8, 10, 0, 0,
                                        0x12, 0x34, 0,    0,    0, 0, 1, 3,  3, 7};
// macOS's SYN: MSS 1460, NOP, window scale 6, NOP, NOP, timestamps, SACK-permitted, End, End.
const std::vector<uint8_t> kMacSyn = {2,    4,    0x05, 0xb4, 1, 3, 3, 6, 1, 1, 8, 10,
                                      0xaa, 0xbb, 0xcc, 0xdd, 0, 0, 0, 0, 4, 2, 0, 0};

TEST(SynOptions, ReadsWhatRealStacksSend) {
    SynOptions o;
    std::vector<uint8_t> tcp = tcp_with_options(kLinuxSyn);
    ASSERT_TRUE(read_syn_options(tcp.data(), static_cast<uint32_t>(tcp.size()), &o));
    EXPECT_EQ(o.mss, 1460);
    EXPECT_EQ(o.wscale, 7);
    EXPECT_TRUE(o.sack_permitted);
    EXPECT_TRUE(o.timestamps);
    EXPECT_EQ(o.ts_val, 0x1234u);
    EXPECT_EQ(o.ts_ecr, 0u);

    tcp = tcp_with_options(kMacSyn);
    ASSERT_TRUE(read_syn_options(tcp.data(), static_cast<uint32_t>(tcp.size()), &o));
    EXPECT_EQ(o.mss, 1460);
    EXPECT_EQ(o.wscale, 6);
    EXPECT_TRUE(o.sack_permitted);
    EXPECT_EQ(o.ts_val, 0xaabbccddu);

    tcp = tcp_with_options({});
    ASSERT_TRUE(read_syn_options(tcp.data(), static_cast<uint32_t>(tcp.size()), &o));
    EXPECT_EQ(o.mss, 0);
    EXPECT_EQ(o.wscale, kNoWindowScale);
    EXPECT_FALSE(o.sack_permitted);
    EXPECT_FALSE(o.timestamps);
}

TEST(SynOptions, ReadsAShiftPast14As14AndSkipsUnknownOptions) {
    SynOptions o;
    // Window scale 20, then TCP Fast Open's cookie option (34, length 10), then MSS 1400.
    std::vector<uint8_t> tcp =
        tcp_with_options({3, 3, 20, 34, 10, 1, 2, 3, 4, 5, 6, 7, 8, 2, 4, 0x05, 0x78});
    ASSERT_TRUE(read_syn_options(tcp.data(), static_cast<uint32_t>(tcp.size()), &o));
    EXPECT_EQ(o.wscale, 14);
    EXPECT_EQ(o.mss, 1400);
}

TEST(SynOptions, RefusesEveryMalformedLayout) {
    SynOptions o;
    const std::vector<std::vector<uint8_t>> bad = {
        {2, 3, 0x05, 0},           // MSS of length 3
        {3, 2, 0, 0},              // window scale of length 2
        {4, 3, 0, 0},              // SACK-permitted of length 3
        {8, 8, 0, 0, 0, 0, 0, 0},  // timestamps of length 8
        {1, 1, 1, 9},              // a kind with no length byte inside the header
        {9, 1, 0, 0},              // length 1
        {9, 0, 0, 0},              // length 0 (would loop)
        {9, 9, 0, 0},              // running past the header
    };
    for (const auto &options : bad) {
        std::vector<uint8_t> tcp = tcp_with_options(options);
        EXPECT_FALSE(read_syn_options(tcp.data(), static_cast<uint32_t>(tcp.size()), &o))
            << int{options[0]} << "/" << int{options[1]};
    }
    // Data offsets below 5 words, or past the bytes present.
    std::vector<uint8_t> tcp = tcp_with_options({});
    tcp[12] = 4 << 4;
    EXPECT_FALSE(read_syn_options(tcp.data(), 20, &o));
    tcp[12] = 6 << 4;
    EXPECT_FALSE(read_syn_options(tcp.data(), 20, &o));
    EXPECT_FALSE(read_syn_options(tcp.data(), 19, &o));
}

// Every byte string of a 40-byte option area: the reader never reads past the header (ASan
// checks), whatever it decides.
TEST(SynOptions, StaysInsideTheHeaderForAnyBytes) {
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int round = 0; round < 20000; ++round) {
        std::vector<uint8_t> options(40);
        for (auto &b : options) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            b = static_cast<uint8_t>(x % 12);  // kinds and lengths around the real ones
        }
        std::vector<uint8_t> tcp = tcp_with_options(options);
        SynOptions o;
        read_syn_options(tcp.data(), static_cast<uint32_t>(tcp.size()), &o);
    }
}

TEST(ProxyCookie, RoundsTheMssDownToAClass) {
    EXPECT_EQ(proxied_options(SynOptions{.mss = 1460}, 4).mss, 1460);
    EXPECT_EQ(proxied_options(SynOptions{.mss = 9000}, 4).mss, 1460);
    EXPECT_EQ(proxied_options(SynOptions{.mss = 1459}, 4).mss, 1452);
    EXPECT_EQ(proxied_options(SynOptions{.mss = 1380}, 4).mss, 1360);
    EXPECT_EQ(proxied_options(SynOptions{.mss = 600}, 4).mss, 536);
    EXPECT_EQ(proxied_options(SynOptions{.mss = 100}, 4).mss, 536);  // below every class
    EXPECT_EQ(proxied_options(SynOptions{}, 4).mss, 536);            // absent: the defaults
    EXPECT_EQ(proxied_options(SynOptions{}, 6).mss, 1220);
}

// The ACK completing a handshake whose SYN had client_isn and whose SYN-ACK the cookie.
PacketInfo ack_of(uint8_t family, uint32_t client_isn, uint32_t cookie) {
    PacketInfo p = test::cookie_attempt(family, 443);
    p.tcp_seq = client_isn + 1;
    p.tcp_ack = cookie + 1;
    return p;
}

TEST(ProxyCookie, GivesBackEveryCombinationOfOptions) {
    const CookieKey key = proxy_cookie_key(CookieKey{0x243f6a8885a308d3ull, 0x13198a2e03707344ull});
    const uint64_t slot_ns = uint64_t{1} << kCookieSlotShift;
    for (uint8_t family : {4, 6})
        for (uint16_t mss : kProxyMssClasses)
            for (unsigned ws = 0; ws <= 15; ++ws)
                for (bool sack : {false, true}) {
                    const ProxiedOptions want{
                        mss, ws == 15 ? kNoWindowScale : static_cast<uint8_t>(ws), sack};
                    const uint32_t isn = 0xfffffff0u + ws;  // wraps past 2^32 for some
                    PacketInfo syn = ack_of(family, isn, 0);
                    const uint32_t cookie = proxy_cookie(key, syn, isn, want, 7);
                    ProxiedOptions got;
                    ASSERT_TRUE(
                        proxy_cookie_check(key, ack_of(family, isn, cookie), 7 * slot_ns, &got));
                    EXPECT_EQ(got, want);
                }
}

TEST(ProxyCookie, HoldsForTheCurrentAndThePreviousSlotOnly) {
    const CookieKey key = proxy_cookie_key(CookieKey{1, 2});
    const uint64_t slot_ns = uint64_t{1} << kCookieSlotShift;
    const ProxiedOptions o{1460, 7, true};
    const uint32_t cookie = proxy_cookie(key, ack_of(4, 1000, 0), 1000, o, 3);
    const PacketInfo ack = ack_of(4, 1000, cookie);
    ProxiedOptions got;
    EXPECT_FALSE(proxy_cookie_check(key, ack, 3 * slot_ns - 1, &got));  // slot 2
    EXPECT_TRUE(proxy_cookie_check(key, ack, 3 * slot_ns, &got));       // slot 3
    EXPECT_TRUE(proxy_cookie_check(key, ack, 5 * slot_ns - 1, &got));   // slot 4
    EXPECT_FALSE(proxy_cookie_check(key, ack, 5 * slot_ns, &got));      // slot 5
    // Slot 0 has no previous slot to try (and does not wrap to the last one).
    const uint32_t first = proxy_cookie(key, ack_of(4, 1000, 0), 1000, o, 0);
    EXPECT_TRUE(proxy_cookie_check(key, ack_of(4, 1000, first), 0, &got));
    const uint32_t last = proxy_cookie(key, ack_of(4, 1000, 0), 1000, o, (uint64_t{1} << 28) - 1);
    EXPECT_FALSE(proxy_cookie_check(key, ack_of(4, 1000, last), 0, &got));
}

TEST(ProxyCookie, FailsForAnyOtherConnectionOrKey) {
    const CookieKey auth{0x243f6a8885a308d3ull, 0x13198a2e03707344ull};
    const CookieKey key = proxy_cookie_key(auth);
    const ProxiedOptions o{1440, 8, true};
    for (uint8_t family : {4, 6}) {
        SCOPED_TRACE(family);
        const uint32_t cookie = proxy_cookie(key, ack_of(family, 5000, 0), 5000, o, 9);
        const PacketInfo ack = ack_of(family, 5000, cookie);
        const uint64_t now = 9ull << kCookieSlotShift;
        ProxiedOptions got;
        ASSERT_TRUE(proxy_cookie_check(key, ack, now, &got));
        PacketInfo q = ack;
        q.src[3] ^= 1;
        EXPECT_FALSE(proxy_cookie_check(key, q, now, &got));
        q = ack;
        q.dst[0] ^= 0x80;
        EXPECT_FALSE(proxy_cookie_check(key, q, now, &got));
        q = ack;
        q.src_port ^= 1;
        EXPECT_FALSE(proxy_cookie_check(key, q, now, &got));
        q = ack;
        q.dst_port ^= 1;
        EXPECT_FALSE(proxy_cookie_check(key, q, now, &got));
        q = ack;
        q.tcp_seq += 1;  // another client ISN
        EXPECT_FALSE(proxy_cookie_check(key, q, now, &got));
        q = ack;
        q.tcp_ack += 1 << 8;  // the MAC's bits
        EXPECT_FALSE(proxy_cookie_check(key, q, now, &got));
        EXPECT_FALSE(proxy_cookie_check(auth, ack, now, &got));  // syn-auth's key
    }
}

// An ACK flood of random numbers: 2^-24 per slot tried, two slots, so about 1 in 8.4 million.
// 1 million random ACKs let through none (a fixed generator: the count is exact, not a bound).
TEST(ProxyCookie, RandomAcksAlmostNeverPass) {
    const CookieKey key = proxy_cookie_key(CookieKey{3, 4});
    uint64_t x = 0x2545f4914f6cdd1dull;
    unsigned passed = 0;
    ProxiedOptions got;
    for (int i = 0; i < 1000000; ++i) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        PacketInfo ack = ack_of(4, static_cast<uint32_t>(x), static_cast<uint32_t>(x >> 32));
        passed += proxy_cookie_check(key, ack, 9ull << kCookieSlotShift, &got) ? 1 : 0;
    }
    EXPECT_EQ(passed, 0u);
}

}  // namespace
}  // namespace floodgate
