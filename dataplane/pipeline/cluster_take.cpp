// This core's side of the cluster sync (cluster_ledger.h): what its shared rules admitted,
// handed to the service thread between bursts.
#include <chrono>
#include <cstring>
#include <thread>

#include "dataplane/pipeline/pipeline.h"

namespace floodgate {

void Pipeline::note_shared(const CompiledRule &r, const PacketInfo &info, const Check &c) {
    SharedRecord rec;
    rec.hash = c.hash;
    rec.key_id = r.key_id;
    if (r.key_kind != KeyKind::none) {
        rec.family = info.family;
        // A dst key's words are the destination's; a pair's are the source's, and its
        // destination is masked here.
        const LimitKey d = r.key_kind == KeyKind::src_dst
                               ? destination_key(info, r.dst_mask_hi, r.dst_mask_lo, 0)
                               : c.key;
        if (r.key_kind == KeyKind::src_dst) {
            std::memcpy(rec.src, &c.key.addr_hi, 8);
            std::memcpy(rec.src + 8, &c.key.addr_lo, 8);
        }
        std::memcpy(rec.dst, &d.addr_hi, 8);
        std::memcpy(rec.dst + 8, &d.addr_lo, 8);
    }
    if (!shared_.add(rec, 1)) ++counters_.cluster_unshared_keys;
}

void Pipeline::serve_shared() {
    const uint64_t asked = shared_asked_.load(std::memory_order_acquire);
    if (!shared_out_.absorb(shared_)) ++counters_.cluster_unshared_keys;
    shared_served_.store(asked, std::memory_order_release);
}

bool Pipeline::take_shared(std::vector<SharedRecord> *out) {
    std::lock_guard<std::mutex> one_taker(take_lock_);
    if (serving_.load(std::memory_order_acquire)) {
        const uint64_t asked = shared_asked_.load(std::memory_order_relaxed) + 1;
        shared_asked_.store(asked, std::memory_order_release);
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
        while (shared_served_.load(std::memory_order_acquire) != asked) {
            if (!serving_.load(std::memory_order_acquire)) break;  // stopped: idle now
            std::this_thread::yield();
            if (std::chrono::steady_clock::now() > deadline) return false;
        }
        if (shared_served_.load(std::memory_order_acquire) == asked) {
            shared_out_.take(out);  // the core writes shared_ on: not touched here
            return true;
        }
    }
    // The core is idle (or this is its own thread): both ledgers are still.
    shared_out_.take(out);
    shared_.take(out);
    return true;
}

}  // namespace floodgate
