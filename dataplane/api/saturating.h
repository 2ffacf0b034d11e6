// Sums of packet counts from outside (other boxes' charges): at UINT64_MAX they stay there
// rather than wrap, so that a sum past any bound is still past it.
#pragma once

#include <cstdint>

namespace floodgate {

inline uint64_t saturating_add(uint64_t a, uint64_t b) {
    uint64_t sum;
    return __builtin_add_overflow(a, b, &sum) ? UINT64_MAX : sum;
}

}  // namespace floodgate
