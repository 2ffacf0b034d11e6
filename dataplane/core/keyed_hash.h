// Keyed hash of a limiter key. The seed is drawn at start from the kernel's random source, so
// an attacker who controls source addresses cannot choose ones that land in the same buckets
// (with a public hash, a few thousand crafted sources would fill two buckets and force every
// later one into the table-full path).
#pragma once

#include <cstdint>

namespace floodgate {

struct HashSeed {
    uint64_t k[4];
};

// Draws a seed from getrandom(2); falls back to the TSC only if that fails.
HashSeed random_hash_seed();

// Multiply-and-fold mixing as in wyhash: a 64x64->128 multiply of key-masked words, folded.
inline uint64_t hash_mix(uint64_t a, uint64_t b) {
    unsigned __int128 p = static_cast<unsigned __int128>(a) * b;
    return static_cast<uint64_t>(p) ^ static_cast<uint64_t>(p >> 64);
}

// The seed is folded into wyhash's well-mixed constants, so that even a weak seed (tests use
// small numbers) still gives well-spread multipliers.
inline uint64_t keyed_hash(const HashSeed &s, uint64_t w0, uint64_t w1, uint64_t w2) {
    uint64_t h = hash_mix(w0 ^ s.k[0] ^ 0xa0761d6478bd642full, w1 ^ s.k[1] ^ 0xe7037ed1a0b428dbull);
    return hash_mix(h ^ w2 ^ s.k[2] ^ 0x8ebc6af09c88c6e3ull, s.k[3] ^ 0x589965cc75374cc3ull);
}

}  // namespace floodgate
