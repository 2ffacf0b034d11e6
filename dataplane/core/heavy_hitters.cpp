#include "dataplane/core/heavy_hitters.h"

#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#elif defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <cmath>
#include <tuple>

namespace floodgate {

namespace {
uint32_t tag_of(uint64_t hash) {
    return static_cast<uint32_t>(hash >> 32) | 1u;
}  // 0: unused
}  // namespace

int HeavyHitters::find(uint64_t hi, uint64_t lo, uint8_t family, uint32_t tag) const {
    uint64_t hits = 0;
#if defined(__AVX512F__)
    // Sixteen tags per compare, into a mask directly: 4 compares for all 64 counters.
    const __m512i want = _mm512_set1_epi32(static_cast<int>(tag));
    for (unsigned i = 0; i < kCounters; i += 16)
        hits |= uint64_t{_mm512_cmpeq_epi32_mask(_mm512_load_si512(&tag_[i]), want)} << i;
#elif defined(__AVX2__)
    const __m256i want = _mm256_set1_epi32(static_cast<int>(tag));
    for (unsigned i = 0; i < kCounters; i += 8) {
        __m256i eq = _mm256_cmpeq_epi32(
            _mm256_load_si256(reinterpret_cast<const __m256i *>(&tag_[i])), want);
        hits |= static_cast<uint64_t>(_mm256_movemask_ps(_mm256_castsi256_ps(eq))) << i;
    }
#elif defined(__SSE2__)
    // Four tags per compare: 16 compares and movemasks for all 64 counters, no branches.
    const __m128i want = _mm_set1_epi32(static_cast<int>(tag));
    for (unsigned i = 0; i < kCounters; i += 4) {
        __m128i eq =
            _mm_cmpeq_epi32(_mm_load_si128(reinterpret_cast<const __m128i *>(&tag_[i])), want);
        hits |= static_cast<uint64_t>(_mm_movemask_ps(_mm_castsi128_ps(eq))) << i;
    }
#else
    for (unsigned i = 0; i < kCounters; ++i) hits |= uint64_t{tag_[i] == tag} << i;
#endif
    while (hits != 0) {
        unsigned i = static_cast<unsigned>(__builtin_ctzll(hits));
        const Source &s = source_[i];
        if (s.addr_hi == hi && s.addr_lo == lo && s.family == family) return static_cast<int>(i);
        hits &= hits - 1;
    }
    return -1;
}

// A counter holding the smallest count. Many counters share the minimum, so a cursor that
// walks on from the last replacement finds one in a step or two; the rescan for a new minimum
// runs at most once per kCounters replacements (amortised O(1) per add).
unsigned HeavyHitters::smallest() {
    for (;;) {
        for (unsigned n = 0; n < kCounters; ++n) {
            unsigned i = (cursor_ + n) % kCounters;
            if (count_[i] == min_count_) {
                cursor_ = (i + 1) % kCounters;
                return i;
            }
        }
        min_count_ = *std::min_element(count_, count_ + kCounters);
    }
}

void HeavyHitters::add(uint64_t hi, uint64_t lo, uint8_t family, uint8_t prefix_len, uint64_t hash,
                       uint32_t weight) {
    const uint64_t sampled = weight > 1;
    if (sampled) [[unlikely]]
        sample_weight_ = weight;
    // A flood repeats its source: the counter that took the last refusal is checked first,
    // which spares the tag scan for every packet of a run (a full 64-bit keyed hash match,
    // as good an identity as the limit table's).
    if (hash_[last_] == hash && used_ > last_) {
        count_[last_] += weight;
        source_[last_].samples += sampled;
        return;
    }
    uint32_t tag = tag_of(hash);
    int c = find(hi, lo, family, tag);
    if (c >= 0) {
        count_[c] += weight;
        source_[c].samples += sampled;
        last_ = static_cast<unsigned>(c);
        return;
    }
    unsigned slot;
    uint64_t floor = 0;
    if (used_ < kCounters) {
        slot = used_++;
    } else {
        slot = smallest();
        floor = count_[slot];
    }
    tag_[slot] = tag;
    count_[slot] = floor + weight;
    source_[slot] = {hi, lo, floor, sampled, family, prefix_len};
    hash_[slot] = hash;
    last_ = slot;
}

std::vector<HeavyHitter> HeavyHitters::top(unsigned n) const {
    std::vector<HeavyHitter> v;
    for (unsigned i = 0; i < used_; ++i) {
        const Source &s = source_[i];
        const double z = kSamplingZ, x = static_cast<double>(s.samples);
        const double sampling =
            sample_weight_ > 1
                ? std::ceil(sample_weight_ * (z * z / 2 + z * std::sqrt(x + z * z / 4)))
                : 0.0;
        v.push_back({s.addr_hi, s.addr_lo, s.family, s.prefix_len, count_[i], s.error,
                     static_cast<uint64_t>(sampling)});
    }
    std::sort(v.begin(), v.end(), [](const HeavyHitter &a, const HeavyHitter &b) {
        return std::tie(b.count, a.family, a.addr_hi, a.addr_lo) <
               std::tie(a.count, b.family, b.addr_hi, b.addr_lo);
    });
    if (v.size() > n) v.resize(n);
    return v;
}

void HeavyHitters::merge(const HeavyHitters &other) {
    sample_weight_ = std::max(sample_weight_, other.sample_weight_);
    for (unsigned i = 0; i < other.used_; ++i) {
        const Source &o = other.source_[i];
        add(o.addr_hi, o.addr_lo, o.family, o.prefix_len, other.hash_[i]);
        int c = find(o.addr_hi, o.addr_lo, o.family, tag_of(other.hash_[i]));
        if (c < 0) continue;  // only if other changed under us (callers merge a copy)
        count_[c] += other.count_[i] - 1;
        source_[c].error += o.error;
        source_[c].samples += o.samples;
    }
}

}  // namespace floodgate
