#include "dataplane/pipeline/refusal_samples.h"

#include <rte_common.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include <cstdlib>
#include <cstring>
#include <new>

namespace floodgate {

RefusalSampler::RefusalSampler(uint64_t seed) : rng_(seed | 1) {
    // rte_ring_init on memory of our own: the ring is private to one worker and the control
    // thread, so it needs no name in DPDK's ring list (and no EAL, for replay and tests).
    // RING_F_EXACT_SZ: kSlots usable (a ring of 2^n slots holds 2^n - 1), in the next power
    // of two's memory.
    const ssize_t bytes =
        rte_ring_get_memsize_elem(sizeof(RefusalSample), rte_align32pow2(kSlots + 1));
    void *mem =
        bytes > 0 ? std::aligned_alloc(128, (static_cast<size_t>(bytes) + 127) & ~127ul) : nullptr;
    if (mem == nullptr) throw std::bad_alloc();
    ring_ = static_cast<rte_ring *>(mem);
    if (rte_ring_init(ring_, "fg_refusals", kSlots,
                      RING_F_SP_ENQ | RING_F_SC_DEQ | RING_F_EXACT_SZ) != 0) {
        std::free(mem);
        throw std::bad_alloc();
    }
    countdown_ = next_gap();
}

RefusalSampler::~RefusalSampler() {
    std::free(ring_);
}

uint32_t RefusalSampler::next_gap() {
    rng_ ^= rng_ << 13;  // xorshift64
    rng_ ^= rng_ >> 7;
    rng_ ^= rng_ << 17;
    return 1 + static_cast<uint32_t>(rng_ % (2 * kMeanGap - 1));
}

void RefusalSampler::take(const RefusalSample &s) {
    countdown_ = next_gap();
    RefusalSample copy = s;
    if (rte_ring_sp_enqueue_elem(ring_, &copy, sizeof copy) == 0)
        taken_.store(taken_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    else
        lost_.store(lost_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

unsigned RefusalSampler::drain(RefusalSample *out, unsigned n) {
    return rte_ring_sc_dequeue_burst_elem(ring_, out, sizeof(RefusalSample), n, nullptr);
}

}  // namespace floodgate
