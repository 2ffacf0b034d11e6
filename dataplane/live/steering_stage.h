// Software steering (docs/design.md, "Several cores: steering"): for ports whose RSS cannot send
// every packet of a source prefix to one queue (net_pcap, net_af_packet, net_tap, memif, or a NIC
// that refuses a source-only key), each worker receives from its own queue and hands every
// packet whose source another worker owns to that worker's ring. A worker then decides its own
// packets only, so its keys are its own (exact limits, no merge) as with NIC steering.
//
// Under NIC steering the same rings carry what the NIC did not hash: frames received without
// RTE_MBUF_F_RX_RSS_HASH (flow types it does not parse, QinQ, ...) land on one queue whoever
// owns them, and go from there to the worker the NIC sends their hashed siblings to (nic_queue
// in steering.h); a hashed frame costs one flag test.
//
// One multi-producer, single-consumer rte_ring of mbufs per worker (lock-free: producers
// reserve with a compare-and-swap). A packet that finds its owner's ring full is freed and
// counted, never waited for: one slow worker cannot stall the others.
#pragma once

#include <cstdint>
#include <vector>

#include "dataplane/api/counter.h"
#include "dataplane/core/steering.h"
#include "dataplane/pipeline/pipeline.h"

struct rte_mbuf;
struct rte_ring;

namespace floodgate {

// `floodgate run --steering`: how packets reach the worker that owns their source prefix.
// automatic: the NIC's RSS where the outside port honours a source-prefix key (read back),
// else software; nic: the NIC's or fail; software: the stage below; none: as RSS spreads
// them, every key shared through the merge.
enum class SteeringMode : uint8_t { automatic, nic, software, none };

// NIC steering's hash, for the frames the NIC did not hash: the outside port's Toeplitz key
// (zeroed past the prefix) and the size of its RETA, filled round robin over the workers.
struct NicHash {
    std::vector<uint8_t> key;
    uint16_t reta_size = 0;
};

class SteeringRings {
  public:
    // One ring of ring_size mbufs per worker; steering is what owners are computed with: by
    // address_owner, or, given nic (NIC steering), by nic_queue for the frames the NIC did not
    // hash (those it hashed are at their owner).
    SteeringRings(unsigned workers, unsigned ring_size, const Steering &steering, NicHash nic = {});
    ~SteeringRings();
    SteeringRings(const SteeringRings &) = delete;
    SteeringRings &operator=(const SteeringRings &) = delete;
    bool ok() const { return ok_; }
    unsigned workers() const { return static_cast<unsigned>(rings_.size()); }
    rte_ring *ring(unsigned worker) const { return rings_[worker]; }
    const Steering &steering() const { return steering_; }
    // Null under software steering.
    const NicHash *nic() const { return nic_.key.empty() ? nullptr : &nic_; }
    // Mbufs the rings can hold at once (the pool must have them besides the RX rings').
    static constexpr unsigned kRingSize = 1024;

  private:
    std::vector<rte_ring *> rings_;
    Steering steering_;
    NicHash nic_;
    bool ok_ = true;
};

// One worker's side: what it receives, steered. Counters are read by other threads.
class SteeringStage {
  public:
    SteeringStage(SteeringRings *rings, unsigned me);
    // Receives up to kMaxBurst - kRingShare packets from (port, queue) (*received says how
    // many), keeps those it owns, hands the others to their owners, and tops its own up from
    // its ring: out[0..n) are this worker's to decide, n returned. The ring always has room in
    // the burst, so that a busy queue of the worker's own cannot starve what the others handed.
    uint16_t receive(uint16_t port, uint16_t queue, rte_mbuf **out, uint16_t *received);
    static constexpr uint16_t kRingShare = 8;
    // receive()'s work on packets already received, got[0..n) (n <= kMaxBurst): what a
    // benchmark times.
    uint16_t steer(rte_mbuf *const *got, uint16_t n, rte_mbuf **out);

    uint64_t handed_out() const { return handed_out_; }  // to other workers' rings
    uint64_t taken_in() const { return taken_in_; }      // from this worker's ring
    uint64_t ring_full() const { return ring_full_; }    // freed: the owner's ring was full
    // NIC steering: frames received here without the NIC's RSS hash (handed out or kept).
    uint64_t unhashed() const { return unhashed_; }

  private:
    void hand_over();

    SteeringRings *rings_;
    unsigned me_;
    // Packets for each other worker, gathered over one receive and enqueued in one call each.
    std::vector<rte_mbuf *> pending_;  // workers x kMaxBurst
    std::vector<uint16_t> n_pending_;
    std::vector<uint16_t> owners_with_pending_;
    Counter handed_out_;
    Counter taken_in_;
    Counter ring_full_;
    Counter unhashed_;
};

}  // namespace floodgate
