#include "dataplane/live/steering_stage.h"

#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include <string>
#include <utility>

namespace floodgate {

SteeringRings::SteeringRings(unsigned workers, unsigned ring_size, const Steering &steering,
                             NicHash nic)
    : steering_(steering), nic_(std::move(nic)) {
    for (unsigned w = 0; w < workers && ok_; ++w) {
        const std::string name = "fg_steer_" + std::to_string(w);
        rings_.push_back(rte_ring_create(name.c_str(), ring_size, static_cast<int>(rte_socket_id()),
                                         RING_F_SC_DEQ | RING_F_EXACT_SZ));
        ok_ = rings_.back() != nullptr;
    }
}

SteeringRings::~SteeringRings() {
    for (rte_ring *r : rings_) {
        if (r == nullptr) continue;
        void *m;
        while (rte_ring_sc_dequeue(r, &m) == 0) rte_pktmbuf_free(static_cast<rte_mbuf *>(m));
        rte_ring_free(r);
    }
}

SteeringStage::SteeringStage(SteeringRings *rings, unsigned me)
    : rings_(rings),
      me_(me),
      pending_(size_t{rings->workers()} * kMaxBurst),
      n_pending_(rings->workers(), 0) {
    owners_with_pending_.reserve(rings->workers());
}

uint16_t SteeringStage::receive(uint16_t port, uint16_t queue, rte_mbuf **out, uint16_t *received) {
    rte_mbuf *got[kMaxBurst - kRingShare];
    *received = rte_eth_rx_burst(port, queue, got, kMaxBurst - kRingShare);
    return steer(got, *received, out);
}

uint16_t SteeringStage::steer(rte_mbuf *const *got, uint16_t n, rte_mbuf **out) {
    uint16_t mine = 0;
    const Steering &s = rings_->steering();
    const NicHash *nic = rings_->nic();
    const unsigned workers = rings_->workers();
    unsigned unhashed = 0;
    for (uint16_t i = 0; i < n; ++i) {
        FrameAddress source;
        rte_mbuf *m = got[i];
        // Under NIC steering a frame the NIC hashed is on its owner's queue already.
        if (nic != nullptr) {
            if ((m->ol_flags & RTE_MBUF_F_RX_RSS_HASH) != 0) {
                out[mine++] = m;
                continue;
            }
            ++unhashed;
        }
        // Frames with no source to read have no owner: decided where they arrive.
        const bool ip = frame_address(rte_pktmbuf_mtod(m, const uint8_t *), rte_pktmbuf_data_len(m),
                                      false, &source);
        unsigned owner = me_;
        if (ip)
            owner = nic != nullptr ? nic_queue(source, nic->key.data(), nic->reta_size, workers)
                                   : address_owner(source, s, workers);
        if (owner == me_) {
            out[mine++] = m;
            continue;
        }
        if (n_pending_[owner] == 0) owners_with_pending_.push_back(static_cast<uint16_t>(owner));
        pending_[size_t{owner} * kMaxBurst + n_pending_[owner]++] = m;
    }
    if (unhashed > 0) unhashed_ += unhashed;
    if (!owners_with_pending_.empty()) hand_over();
    if (mine < kMaxBurst) {
        const unsigned got_in = rte_ring_sc_dequeue_burst(
            rings_->ring(me_), reinterpret_cast<void **>(out + mine), kMaxBurst - mine, nullptr);
        taken_in_ += got_in;
        mine = static_cast<uint16_t>(mine + got_in);
    }
    return mine;
}

void SteeringStage::hand_over() {
    for (uint16_t owner : owners_with_pending_) {
        rte_mbuf **batch = &pending_[size_t{owner} * kMaxBurst];
        const unsigned n = n_pending_[owner];
        const unsigned sent = rte_ring_mp_enqueue_burst(
            rings_->ring(owner), reinterpret_cast<void *const *>(batch), n, nullptr);
        handed_out_ += sent;
        if (sent < n) {
            rte_pktmbuf_free_bulk(batch + sent, n - sent);
            ring_full_ += n - sent;
        }
        n_pending_[owner] = 0;
    }
    owners_with_pending_.clear();
}

}  // namespace floodgate
