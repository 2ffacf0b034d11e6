// Which connections syn-proxy answered a SYN of lately: a client's ACK can carry a cookie only if
// its connection (addresses and ports) was sent a SYN-ACK, so an ACK whose bit is clear is no
// cookie and skips the check's two SipHashes. That is every segment of the connections the
// proxy does not hold (verified sources' and older ones), which would otherwise pay them all.
//
// Two generations of 2^20 bits (128 KiB each, their words interleaved), each 2^33 ns (8.6 s) long:
// an answer is found for 8.6 to 17.2 s, far longer than any client takes to ACK a SYN-ACK (a client
// that retries its SYN is answered again). No false negatives within that time; false positives
// cost the check they would have cost anyway: 1 - e^(-A / 2^20) for A answers in two generations (8
// % at 10,000 answers a second). Past 2^19 answers in two generations (a spoofed SYN flood: 40 % of
// the bits would be set) the filter stands aside until both generations are quieter: every ACK
// is checked, as without it, and no answer pays for the bit it would set (a cache miss in
// 256 KiB).
// Unkeyed: a chosen collision only buys its sender a check it fails.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "dataplane/core/parse.h"

namespace floodgate {

class AnsweredFilter {
  public:
    static constexpr unsigned kBitsLog2 = 20;
    static constexpr unsigned kGenerationShift = 33;  // ns: 8.6 s

    AnsweredFilter() : words_(2 * kWords) {}

    void add(const PacketInfo &p, uint64_t now_ns) {
        rotate(now_ns);
        ++added_[generation_ & 1];
        if (added_[0] + added_[1] >= kSaturated) {
            skipped_[generation_ & 1] = true;
            return;
        }
        const uint64_t i = index(p);
        words_[word(i, generation_)] |= uint64_t{1} << (i % 64);
    }
    bool may_contain(const PacketInfo &p, uint64_t now_ns) {
        rotate(now_ns);
        if (saturated()) return true;
        const uint64_t i = index(p), bit = uint64_t{1} << (i % 64);
        const uint64_t *pair = &words_[2 * (i / 64)];  // both generations' words: one line
        return ((pair[0] | pair[1]) & bit) != 0;
    }
    // Set aside while either generation has answers whose bits were not set.
    bool saturated() const { return skipped_[0] || skipped_[1]; }

  private:
    static constexpr uint64_t kWords = (uint64_t{1} << kBitsLog2) / 64;
    static constexpr uint64_t kSaturated = uint64_t{1} << (kBitsLog2 - 1);

    // The connection as the client sends it: both addresses (IPv4's in their first 4 bytes,
    // the rest zero) and both ports, mixed by multiplication.
    static uint64_t index(const PacketInfo &p) {
        uint64_t w[4];
        std::memcpy(w, p.src, 16);
        std::memcpy(w + 2, p.dst, 16);
        const uint64_t ports = uint64_t{p.src_port} << 16 | p.dst_port;
        uint64_t h = w[0] * 0x9e3779b97f4a7c15ull ^ w[1] * 0xc2b2ae3d27d4eb4full ^
                     w[2] * 0x165667b19e3779f9ull ^ w[3] * 0xd6e8feb86659fd93ull ^
                     ports * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
        return h * 0xbf58476d1ce4e5b9ull >> (64 - kBitsLog2);
    }
    // The generations' words side by side, so that a check reads one cache line, not two.
    static uint64_t word(uint64_t bit, uint64_t generation) {
        return 2 * (bit / 64) + (generation & 1);
    }
    // A new generation clears the older one; after two or more without an answer, both.
    void rotate(uint64_t now_ns) {
        const uint64_t g = now_ns >> kGenerationShift;
        if (g <= generation_) [[likely]]
            return;
        if (g == generation_ + 1) {
            generation_ = g;
            for (uint64_t w = g & 1; w < 2 * kWords; w += 2) words_[w] = 0;
            added_[g & 1] = 0;
            skipped_[g & 1] = false;
        } else {
            generation_ = g;
            std::fill(words_.begin(), words_.end(), 0);
            added_[0] = added_[1] = 0;
            skipped_[0] = skipped_[1] = false;
        }
    }

    std::vector<uint64_t> words_;
    uint64_t generation_ = 0;
    uint64_t added_[2] = {};  // answers in each generation
    bool skipped_[2] = {};    // ... some of which past kSaturated: their bits not set
};

}  // namespace floodgate
