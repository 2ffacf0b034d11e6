// Nanoseconds in a millisecond, for the tests' clocks: one definition for every test file, so
// that the ASan tree's unity build (a target's files compiled as one) never sees two.
#pragma once

#include <cstdint>

namespace floodgate {

inline constexpr uint64_t kMs = 1'000'000;

}  // namespace floodgate
