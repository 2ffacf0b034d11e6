// Which keys this core may have remembered (Pipeline::remember_until, or a verification another
// core published through the merge): 2^20 bits, each for the keys with those 20 bits of their
// hash, 128 KiB per core.
//
// No false negatives: a key whose bit is clear was never remembered here, so syn-auth skips the
// table lookup of a source that never proved itself (under a spoofed SYN flood, every SYN) and
// the two random cache lines that lookup reads (BM_MemoryFloor: most of a packet's memory cost
// once the table outgrows the caches). Bits are never cleared: a key that expired leaves its
// bit set, and its lookup costs what it did without the filter. Among V remembered keys a
// fresh key finds its bit set with probability 1 - e^(-V / 2^20): 1% at 10,000.
#pragma once

#include <cstdint>
#include <vector>

namespace floodgate {

class RememberedFilter {
  public:
    static constexpr unsigned kBitsLog2 = 20;

    RememberedFilter() : words_(kBits / 64) {}

    void add(uint64_t h) { words_[index(h) / 64] |= uint64_t{1} << (index(h) % 64); }
    bool may_contain(uint64_t h) const {
        return (words_[index(h) / 64] >> (index(h) % 64) & 1) != 0;
    }

  private:
    static constexpr uint64_t kBits = uint64_t{1} << kBitsLog2;
    // Bits 40-59: the table's buckets come from bits 0-31 and 32-63, whole; any bits of a
    // keyed 64-bit hash serve.
    static uint64_t index(uint64_t h) { return (h >> 40) & (kBits - 1); }

    std::vector<uint64_t> words_;
};

}  // namespace floodgate
