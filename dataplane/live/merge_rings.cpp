#include "dataplane/live/merge_rings.h"

#include <rte_lcore.h>
#include <rte_malloc.h>

#include <algorithm>
#include <cstring>

namespace floodgate {

BroadcastRing::BroadcastRing(unsigned capacity, int socket) : mask_(capacity - 1) {
    if (capacity == 0 || (capacity & (capacity - 1)) != 0) return;
    slots_ = static_cast<Slot *>(
        rte_zmalloc_socket("fg_merge_ring", sizeof(Slot) * capacity, 64, socket));
}

BroadcastRing::~BroadcastRing() {
    rte_free(slots_);
}

void BroadcastRing::publish(const Consumption *records, unsigned n) {
    n = static_cast<unsigned>(std::min<uint64_t>(n, mask_ + 1));  // never over the ring's own
    const uint64_t head = head_.load(std::memory_order_relaxed);  // this thread's own
    // Claimed before written: a reader that then sees the claim discards what it read there.
    claimed_.store(head + n, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    for (unsigned i = 0; i < n; ++i) {
        uint64_t words[kWords];
        std::memcpy(words, &records[i], sizeof(words));
        Slot &s = slots_[(head + i) & mask_];
        for (unsigned w = 0; w < kWords; ++w)
            std::atomic_ref<uint64_t>(s.words[w]).store(words[w], std::memory_order_relaxed);
    }
    head_.store(head + n, std::memory_order_release);
}

unsigned BroadcastRing::read(uint64_t *cursor, Consumption *out, unsigned max,
                             uint64_t *lost) const {
    const uint64_t head = head_.load(std::memory_order_acquire);
    const uint64_t capacity = mask_ + 1;
    uint64_t from = *cursor;
    if (head - from > capacity) {  // overwritten before this reader came by
        *lost += head - from - capacity;
        from = head - capacity;
    }
    const auto n = static_cast<unsigned>(std::min<uint64_t>(head - from, max));
    for (unsigned i = 0; i < n; ++i) {
        uint64_t words[kWords];
        Slot &s = slots_[(from + i) & mask_];
        for (unsigned w = 0; w < kWords; ++w)
            words[w] = std::atomic_ref<uint64_t>(s.words[w]).load(std::memory_order_relaxed);
        std::memcpy(&out[i], words, sizeof(words));
    }
    std::atomic_thread_fence(std::memory_order_acquire);
    // Records the producer has claimed since may have overwritten the first ones copied.
    const uint64_t claimed = claimed_.load(std::memory_order_relaxed);
    unsigned skip = 0;
    if (claimed > capacity && claimed - capacity > from)
        skip = static_cast<unsigned>(std::min<uint64_t>(claimed - capacity - from, n));
    if (skip > 0) {
        *lost += skip;
        std::memmove(out, out + skip, sizeof(Consumption) * (n - skip));
    }
    *cursor = from + n;
    return n - skip;
}

LiveMerger::LiveMerger(unsigned workers, unsigned ring_records, unsigned cluster_records) {
    const int socket = static_cast<int>(rte_socket_id());
    for (unsigned w = 0; w < workers && workers > 1 && ok_; ++w) {
        rings_.push_back(std::make_unique<BroadcastRing>(ring_records, socket));
        ok_ = rings_.back()->ok();
    }
    cluster_ = std::make_unique<BroadcastRing>(cluster_records, socket);
    ok_ = ok_ && cluster_->ok();
}

}  // namespace floodgate
