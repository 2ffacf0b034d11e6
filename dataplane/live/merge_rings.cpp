#include "dataplane/live/merge_rings.h"

#include <rte_lcore.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include <string>

namespace floodgate {

LiveMerger::LiveMerger(unsigned workers, unsigned ring_records) : rings_(workers) {
    scratch_.resize(ring_records);
    for (unsigned w = 0; w < workers && ok_; ++w) {
        for (auto [ring, dir] : {std::pair{&rings_[w].out, "o"}, std::pair{&rings_[w].in, "i"}}) {
            std::string name = "fg_merge_" + std::string(dir) + std::to_string(w);
            *ring = rte_ring_create_elem(name.c_str(), sizeof(Consumption), ring_records,
                                         static_cast<int>(rte_socket_id()),
                                         RING_F_SP_ENQ | RING_F_SC_DEQ | RING_F_EXACT_SZ);
            ok_ = ok_ && *ring != nullptr;
        }
    }
}

LiveMerger::~LiveMerger() {
    for (MergeRings &r : rings_) {
        rte_ring_free(r.out);
        rte_ring_free(r.in);
    }
}

uint64_t LiveMerger::forward() {
    uint64_t forwarded = 0;
    for (size_t from = 0; from < rings_.size(); ++from) {
        unsigned n =
            rte_ring_sc_dequeue_burst_elem(rings_[from].out, scratch_.data(), sizeof(Consumption),
                                           static_cast<unsigned>(scratch_.size()), nullptr);
        forwarded += n;
        for (size_t to = 0; to < rings_.size(); ++to) {
            if (to == from) continue;
            unsigned sent = rte_ring_sp_enqueue_burst_elem(rings_[to].in, scratch_.data(),
                                                           sizeof(Consumption), n, nullptr);
            dropped_ += n - sent;
        }
    }
    return forwarded;
}

}  // namespace floodgate
