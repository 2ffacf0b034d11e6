// The per-lcore packet loop of `floodgate run`: receive a burst on the outside port's queue,
// decide it with this core's Pipeline, send the passed frames out of the inside port (or back
// out of the same port in one-port mode), and forward inside-to-outside traffic unfiltered.
// No locks, allocation, syscalls or logging in the loop; the clock is the TSC, read once per
// loop pass and converted to nanoseconds with a multiply and a shift. While the queue is busy
// a full burst waits one pass, pipelined (Pipeline::prepare), and is judged at the time of
// the pass that decides it. Answers go back out of the
// outside port, on the same queue.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "dataplane/api/counter.h"
#include "dataplane/api/stats.h"
#include "dataplane/live/live_ruleset.h"
#include "dataplane/live/merge_rings.h"
#include "dataplane/live/steering_stage.h"
#include "dataplane/pipeline/pipeline.h"

struct rte_eth_dev_tx_buffer;
struct rte_mbuf;

namespace floodgate {

struct WorkerPorts {
    uint16_t outside = 0;
    uint16_t inside = 0;  // == outside in one-port mode
    uint16_t queue = 0;   // this worker's RX and TX queue on both ports, and its worker index
    // The outside port computes IPv4, TCP and UDP checksums of what it sends (answers).
    bool outside_checksum_offload = false;
};

class Worker {
  public:
    // rules: the ruleset, read once per loop pass. merge: every worker's merge ring (this one
    // publishes on ring ports.queue and reads the others; none with one worker) and the
    // cluster's ring, which every worker reads.
    // steering: the steering rings (software steering's, or NIC steering's for what the NIC did
    // not hash), or nullptr when packets arrive at their owner (or have none).
    Worker(const WorkerPorts &ports, Pipeline *pipeline, LiveRuleSet *rules,
           const std::atomic<bool> *stop, LiveMerger *merge, uint64_t merge_interval_ns,
           SteeringRings *steering);
    ~Worker();
    bool ok() const {
        return to_inside_ != nullptr && to_outside_ != nullptr && answers_out_ != nullptr;
    }
    // The loop; returns when *stop is set, after flushing its TX buffers. tsc0 is the TSC at
    // the dataplane's start, the same for every worker, so that their clocks (and the merge
    // lag between them) agree.
    void run(uint64_t tsc0);

    // Read from other threads (live_stats). Outside to inside, rx is the pipeline's packets
    // and tx its passed (every passed frame is handed to the TX queue), so only the NIC's
    // refusals are counted here; inside to outside is forwarded unfiltered, so tx = rx.
    const Pipeline &pipeline() const { return *pipeline_; }
    uint64_t filtered_tx_failed() const { return filtered_tx_failed_; }
    uint64_t returning_rx() const { return returning_rx_; }
    uint64_t returning_tx_failed() const { return returning_tx_failed_; }
    // Frames from the inside syn-proxy kept from the outside: server SYN-ACKs it answered (its
    // ACK went back inside) and segments it refused. The rest are handed to the TX queue.
    uint64_t returning_kept() const { return returning_kept_; }
    // Answers the outside port's TX queue refused (every answer verdict, the pipeline's
    // answered counter, is handed to it).
    uint64_t answers_tx_failed() const { return answers_tx_failed_; }
    // Records of other workers overwritten on their rings before this one read them.
    uint64_t merge_records_lost() const { return merge_records_lost_; }
    // Records of other boxes (the cluster ring) overwritten before this worker read them.
    uint64_t cluster_records_lost() const { return cluster_records_lost_; }
    // Longest time from another core's publish to its charge here (TSC clock, ns).
    uint64_t merge_max_lag_ns() const { return merge_max_lag_ns_; }
    // TSC cycles spent in loop passes that received or decided a burst, from the clock read
    // before the receive to after the decided frames were handed to the TX queues:
    // busy_tsc / packets is the cost of a packet inside floodgate, I/O included.
    uint64_t busy_tsc() const { return busy_tsc_; }
    // The steering stage's counters (null without it).
    const SteeringStage *steering() const { return steering_.get(); }

  private:
    WorkerPorts ports_;
    Pipeline *pipeline_;
    LiveRuleSet *rules_;
    const std::atomic<bool> *stop_;
    rte_eth_dev_tx_buffer *to_inside_ = nullptr;
    rte_eth_dev_tx_buffer *to_outside_ = nullptr;
    rte_eth_dev_tx_buffer *answers_out_ = nullptr;  // back out of the outside port
    Counter filtered_tx_failed_;
    Counter answers_tx_failed_;
    Counter returning_rx_;
    Counter returning_tx_failed_;
    Counter returning_kept_;
    LiveMerger *merge_;
    uint64_t merge_interval_ns_;
    std::vector<Consumption> published_;   // capacity reserved once
    std::vector<uint64_t> merge_cursors_;  // this worker's place in each other worker's ring
    unsigned next_ring_ = 0;               // the other worker whose ring the next pass reads first
    uint64_t cluster_cursor_ = 0;          // this worker's place in the cluster ring
    std::unique_ptr<SteeringStage> steering_;
    Counter merge_records_lost_;
    Counter merge_max_lag_ns_;
    Counter cluster_records_lost_;
    Counter busy_tsc_;

    // A burst received: its mbufs and what the pipeline reads of them.
    struct Received {
        rte_mbuf *pkts[kMaxBurst];
        const uint8_t *frames[kMaxBurst];
        uint32_t lens[kMaxBurst];
        uint32_t captured[kMaxBurst];
        uint64_t now_ns[kMaxBurst];
    };
    void decide_waiting(Received &b, uint64_t now);
    void send(rte_mbuf *const *pkts, uint16_t n, const Verdict *verdicts);
    void release_held(uint64_t now, bool stopping);
    // syn-proxy's steps (a client segment's, a server segment's) and its held segments.
    void proxy_from_client(rte_mbuf *m, uint16_t i, rte_mbuf **dropped, unsigned *n_dropped);
    void proxy_returning(rte_mbuf *const *pkts, uint16_t n, uint64_t now);
    void proxy_release_held(ProxyFlow *flow, bool send, uint64_t now);
    void publish_consumption(uint64_t now_ns);
    void apply_consumption(uint64_t now_ns);
};

// TSC to nanoseconds: ns = (tsc * mult) >> shift, computed once at start.
struct TscClock {
    uint64_t mult = 0;
    unsigned shift = 0;
    static TscClock calibrated();
    uint64_t ns(uint64_t tsc) const {
        return static_cast<uint64_t>((static_cast<unsigned __int128>(tsc) * mult) >> shift);
    }
};

}  // namespace floodgate
