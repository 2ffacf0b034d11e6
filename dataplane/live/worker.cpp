#include "dataplane/live/worker.h"

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>

#include <algorithm>

namespace floodgate {

TscClock TscClock::calibrated() {
    // 32 bits of fraction keep the error under 1 ns per 4 s at any TSC rate above 1 MHz.
    TscClock c;
    c.shift = 32;
    c.mult = static_cast<uint64_t>((static_cast<unsigned __int128>(1000000000) << 32) /
                                   rte_get_tsc_hz());
    return c;
}

namespace {
// syn-proxy's connection table slots the sweep visits per loop pass: a 65,536-connection table
// (81,928 slots) in about 10,000 passes, 0.1 s at a pass every 10 us (a timeout is late by that
// much at most; a busy core's passes are longer).
constexpr uint32_t kProxySweepSlotsPerPass = 8;

// Frames the NIC does not take are freed and counted, never retried or leaked: DPDK's
// rte_eth_tx_buffer_count_callback, with a counter other threads may read.
void count_unsent(rte_mbuf **pkts, uint16_t unsent, void *failed) {
    rte_pktmbuf_free_bulk(pkts, unsent);
    *static_cast<Counter *>(failed) += unsent;
}

// What an answer asks of the port's TX checksum offload: nothing when it was computed in
// software; else the header lengths and which checksums to compute (the L4 field already
// holds the pseudo-header sum, answer.h).
void answer_tx_offload(const AnswerPlan &plan, const PacketInfo &info, rte_mbuf *m) {
    if (!plan.offload_checksums) return;
    m->l2_len = info.l3_offset;
    m->l3_len = info.family == 4 ? 20 : 40;
    m->ol_flags |=
        (info.family == 4 ? RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_IP_CKSUM : RTE_MBUF_F_TX_IPV6) |
        (plan.kind == AnswerKind::dns_truncated ? RTE_MBUF_F_TX_UDP_CKSUM
                                                : RTE_MBUF_F_TX_TCP_CKSUM);
}

// A frame written whole in its first segment (an answer; syn-proxy's SYN or ACK to the server,
// its RST to a client), len bytes: the rest of a chain freed, the buffer-ownership bits of an
// external or indirect mbuf kept, no offload asked (answer_tx_offload says what an answer
// asks). False if len does not fit the segment (never: every builder checks its room).
bool set_frame_len(rte_mbuf *m, uint32_t len) {
    if (m->next != nullptr) {
        rte_pktmbuf_free(m->next);
        m->next = nullptr;
        m->nb_segs = 1;
        m->pkt_len = m->data_len;
    }
    const uint32_t now_len = rte_pktmbuf_data_len(m);
    if (len < now_len && rte_pktmbuf_trim(m, static_cast<uint16_t>(now_len - len)) != 0)
        return false;
    if (len > now_len && rte_pktmbuf_append(m, static_cast<uint16_t>(len - now_len)) == nullptr)
        return false;
    m->ol_flags &= RTE_MBUF_F_EXTERNAL | RTE_MBUF_F_INDIRECT;
    m->tx_offload = 0;
    return true;
}

// What syn-proxy may rewrite of a frame: its first segment, which holds its headers (the parser
// reads them from there), with that segment's room.
Pipeline::ProxyFrame writable_frame(rte_mbuf *m) {
    const uint32_t first = rte_pktmbuf_data_len(m);
    return {rte_pktmbuf_mtod(m, uint8_t *), rte_pktmbuf_pkt_len(m), first,
            first + rte_pktmbuf_tailroom(m)};
}

rte_mbuf *mbuf_of(uint64_t handle) {
    return reinterpret_cast<rte_mbuf *>(static_cast<uintptr_t>(handle));
}

rte_eth_dev_tx_buffer *make_tx_buffer(Counter *failed, int socket) {
    auto *b = static_cast<rte_eth_dev_tx_buffer *>(
        rte_zmalloc_socket("fg_tx_buffer", RTE_ETH_TX_BUFFER_SIZE(kMaxBurst), 0, socket));
    if (b == nullptr) return nullptr;
    rte_eth_tx_buffer_init(b, kMaxBurst);
    rte_eth_tx_buffer_set_err_callback(b, count_unsent, failed);
    return b;
}

// What the pipeline reads of a burst of mbufs (their times are set where they are judged). A
// chained mbuf has only its first segment's bytes contiguous: the parser reads headers from
// those (captured) and judges lengths by the whole frame.
void frames_of(rte_mbuf *const *pkts, uint16_t n, const uint8_t **frames, uint32_t *lens,
               uint32_t *captured) {
    for (uint16_t i = 0; i < n; ++i) {
        frames[i] = rte_pktmbuf_mtod(pkts[i], const uint8_t *);
        lens[i] = rte_pktmbuf_pkt_len(pkts[i]);
        captured[i] = rte_pktmbuf_data_len(pkts[i]);
        rte_prefetch0(frames[i]);
    }
}
}  // namespace

Worker::Worker(const WorkerPorts &ports, Pipeline *pipeline, LiveRuleSet *rules,
               const std::atomic<bool> *stop, LiveMerger *merge, uint64_t merge_interval_ns,
               SteeringRings *steering)
    : ports_(ports),
      pipeline_(pipeline),
      rules_(rules),
      stop_(stop),
      merge_(merge),
      merge_interval_ns_(merge_interval_ns) {
    if (merge_->merging()) {
        pipeline_->enable_merge();
        published_.reserve(2 * kMaxUnpublishedKeys);  // limits and verifications
        merge_cursors_.assign(merge_->workers(), 0);
        const unsigned next = ports.queue + 1u;
        next_ring_ = next == merge_->workers() ? 0 : next;
    }
    if (steering != nullptr) steering_ = std::make_unique<SteeringStage>(steering, ports.queue);
    pipeline_->set_checksum_offload(ports.outside_checksum_offload);
    // From now on stats readers ask the pipeline for copies (it is about to run on its lcore).
    pipeline_->start_serving_reads();
    int socket = static_cast<int>(rte_socket_id());
    to_inside_ = make_tx_buffer(&filtered_tx_failed_, socket);
    to_outside_ = make_tx_buffer(&returning_tx_failed_, socket);
    answers_out_ = make_tx_buffer(&answers_tx_failed_, socket);
}

Worker::~Worker() {
    pipeline_->stop_serving_reads();  // in case run() never ran
    rte_free(to_inside_);
    rte_free(to_outside_);
    rte_free(answers_out_);
}

// Publishes this core's consumption of shared keys since the last call (nothing when every
// key it saw was its own: then its ring is not touched).
void Worker::publish_consumption(uint64_t now_ns) {
    published_.clear();
    pipeline_->publish(&published_);
    if (published_.empty()) return;
    for (Consumption &c : published_) c.published_ns = now_ns;
    merge_->ring(ports_.queue).publish(published_.data(), static_cast<unsigned>(published_.size()));
}

// Charges what the other cores published to this core's TATs; a ring with nothing new costs
// one load.
void Worker::apply_consumption(uint64_t now_ns) {
    // At most kMaxAppliedPerPass records per loop pass, so that a flood of new keys on the
    // other cores cannot keep this one from polling its RX queue; the rings take turns at
    // being read first.
    constexpr unsigned kMaxAppliedPerPass = 256;
    const unsigned n_rings = merge_->workers();
    Consumption incoming[64];
    uint64_t lost = 0, cluster_lost = 0;
    unsigned applied = 0;
    // The other workers' rings, from next_ring_ on (never this worker's own).
    const auto after = [&](unsigned ring) {
        do {
            if (++ring == n_rings) ring = 0;
        } while (ring == ports_.queue);
        return ring;
    };
    unsigned from = next_ring_;
    for (unsigned k = 0; k + 1 < n_rings && applied < kMaxAppliedPerPass; ++k, from = after(from)) {
        unsigned m;
        while (applied < kMaxAppliedPerPass &&
               (m = merge_->ring(from).read(&merge_cursors_[from], incoming,
                                            std::min(64u, kMaxAppliedPerPass - applied), &lost)) >
                   0) {
            applied += m;
            for (unsigned i = 0; i < m; ++i) {
                pipeline_->apply(incoming[i], now_ns);
                // now_ns was read at the top of this loop pass, possibly just before the other
                // core published: such records are counted as no lag.
                const uint64_t published = incoming[i].published_ns;
                const uint64_t lag = now_ns > published ? now_ns - published : 0;
                if (lag > merge_max_lag_ns_) merge_max_lag_ns_.set(lag);
            }
        }
    }
    if (n_rings > 1) next_ring_ = after(next_ring_);  // the next pass starts one ring further
    // Then the other boxes' charges, within what is left of the budget (no lag kept: they
    // were published on the service's clock).
    unsigned m;
    while (applied < kMaxAppliedPerPass &&
           (m = merge_->cluster_ring().read(&cluster_cursor_, incoming,
                                            std::min(64u, kMaxAppliedPerPass - applied),
                                            &cluster_lost)) > 0) {
        applied += m;
        for (unsigned i = 0; i < m; ++i) pipeline_->apply(incoming[i], now_ns);
    }
    if (lost > 0) merge_records_lost_ += lost;
    if (cluster_lost > 0) cluster_records_lost_ += cluster_lost;
}

// Sends a decided burst on: passed frames to the inside port, answers (built in the frame's
// own mbuf) back out of the outside port, the rest freed.
void Worker::send(rte_mbuf *const *pkts, uint16_t n, const Verdict *verdicts) {
    rte_mbuf *dropped[kMaxBurst];
    unsigned n_dropped = 0;
    unsigned n_answers = 0;
    bool proxied = false;
    for (uint16_t i = 0; i < n; ++i) {
        if (verdicts[i] == Verdict::pass) {
            rte_eth_tx_buffer(ports_.inside, ports_.queue, to_inside_, pkts[i]);
        } else if (verdicts[i] == Verdict::proxy) {
            proxy_from_client(pkts[i], i, dropped, &n_dropped);
            proxied = true;  // a RST may have gone back to the client
        } else if (verdicts[i] == Verdict::delay) {
            pipeline_->hold(i, reinterpret_cast<uintptr_t>(pkts[i]));  // sent by release_held
        } else if (verdicts[i] == Verdict::answer) {
            // Sent back out of the port it came in on. The pipeline planned it for a frame
            // whose bytes were all in the first segment; a chain (even of empty segments) is
            // not answered.
            rte_mbuf *m = pkts[i];
            const uint32_t len =
                rte_pktmbuf_is_contiguous(m)
                    ? build_answer(pipeline_->answer_plan(i), pipeline_->packet_info(i),
                                   rte_pktmbuf_mtod(m, uint8_t *), rte_pktmbuf_data_len(m))
                    : 0;
            if (len == 0 || !set_frame_len(m, len)) {
                ++answers_tx_failed_;  // counted as answered: its TX failed
                dropped[n_dropped++] = m;
                continue;
            }
            answer_tx_offload(pipeline_->answer_plan(i), pipeline_->packet_info(i), m);
            rte_eth_tx_buffer(ports_.outside, ports_.queue, answers_out_, m);
            ++n_answers;
        } else {
            dropped[n_dropped++] = pkts[i];
        }
    }
    // One call back to the mempool for the burst's drops (a flood drops most).
    rte_pktmbuf_free_bulk(dropped, n_dropped);
    rte_eth_tx_buffer_flush(ports_.inside, ports_.queue, to_inside_);
    if (n_answers > 0 || proxied)
        rte_eth_tx_buffer_flush(ports_.outside, ports_.queue, answers_out_);
}

// A client's segment toward a syn-proxy rule's servers, as the proxy's step says: on to the
// inside (rewritten, or as the server's SYN), kept until the server answers, back to the client
// as a RST (its connection failed), or dropped.
void Worker::proxy_from_client(rte_mbuf *m, uint16_t i, rte_mbuf **dropped, unsigned *n_dropped) {
    const Pipeline::ProxyFrame frame = writable_frame(m);
    const Pipeline::ProxyOut out = pipeline_->proxy_client(i, frame.bytes, frame.cap);
    switch (out.step) {
        case ProxyStep::not_proxied:
        case ProxyStep::forward:
            rte_eth_tx_buffer(ports_.inside, ports_.queue, to_inside_, m);
            return;
        case ProxyStep::server_syn:
            if (!set_frame_len(m, out.len)) break;
            rte_eth_tx_buffer(ports_.inside, ports_.queue, to_inside_, m);
            return;
        case ProxyStep::hold:
            pipeline_->proxy_hold(out.flow, reinterpret_cast<uintptr_t>(m));
            return;
        case ProxyStep::reset_client:
            if (!set_frame_len(m, out.len)) break;
            rte_eth_tx_buffer(ports_.outside, ports_.queue, answers_out_, m);
            return;
        default:
            break;
    }
    dropped[(*n_dropped)++] = m;
}

// Frames from the inside while syn-proxy has connections: each server's segment as the proxy's
// step says (out to the client, rewritten; its SYN-ACK answered with the ACK back inside, then
// the client's held segments after it; dropped), anything else out unchanged.
void Worker::proxy_returning(rte_mbuf *const *pkts, uint16_t n, uint64_t now) {
    rte_mbuf *dropped[kMaxBurst];
    unsigned n_dropped = 0, kept = 0;
    for (uint16_t i = 0; i < n; ++i) {
        rte_mbuf *m = pkts[i];
        const Pipeline::ProxyOut out = pipeline_->proxy_server(writable_frame(m), now);
        switch (out.step) {
            case ProxyStep::server_ack:
                if (set_frame_len(m, out.len))
                    rte_eth_tx_buffer(ports_.inside, ports_.queue, to_inside_, m);
                else
                    dropped[n_dropped++] = m;
                proxy_release_held(out.flow, true, now);
                ++kept;
                break;
            case ProxyStep::refused:
                proxy_release_held(out.flow, false, now);
                rte_eth_tx_buffer(ports_.outside, ports_.queue, to_outside_, m);
                break;
            case ProxyStep::drop:
                dropped[n_dropped++] = m;
                ++kept;
                break;
            default:
                rte_eth_tx_buffer(ports_.outside, ports_.queue, to_outside_, m);
                break;
        }
    }
    rte_pktmbuf_free_bulk(dropped, n_dropped);
    if (kept > 0) returning_kept_ += kept;
    rte_eth_tx_buffer_flush(ports_.inside, ports_.queue, to_inside_);
}

// The client segments a connection held while it opened: sent on, translated, once the server
// answered (send), or freed.
void Worker::proxy_release_held(ProxyFlow *flow, bool send, uint64_t now) {
    uint64_t held[kHeldPerFlow];
    const unsigned n = pipeline_->proxy_take_held(flow, held);
    for (unsigned k = 0; k < n; ++k) {
        rte_mbuf *m = mbuf_of(held[k]);
        if (send && pipeline_->proxy_held(writable_frame(m), now).step == ProxyStep::forward)
            rte_eth_tx_buffer(ports_.inside, ports_.queue, to_inside_, m);
        else
            rte_pktmbuf_free(m);
    }
}

// Sends the frames shape rules held whose time has come (up to four bursts a pass, so that
// receiving goes on), and frees those a reload dropped. stopping: frees every frame held.
void Worker::release_held(uint64_t now, bool stopping) {
    Pipeline::Released out[kMaxBurst];
    rte_mbuf *dropped[kMaxBurst];
    for (unsigned round = 0; round < 4 && pipeline_->holding() > 0; ++round) {
        const unsigned n = stopping ? pipeline_->drop_held(out, kMaxBurst)
                                    : pipeline_->release(now, true, out, kMaxBurst);
        unsigned n_dropped = 0;
        for (unsigned i = 0; i < n; ++i) {
            rte_mbuf *m = mbuf_of(out[i].handle);
            if (out[i].sent)
                rte_eth_tx_buffer(ports_.inside, ports_.queue, to_inside_, m);
            else
                dropped[n_dropped++] = m;
        }
        rte_pktmbuf_free_bulk(dropped, n_dropped);
        if (n < kMaxBurst) break;
        if (stopping) round = 0;  // every one, however many
    }
    rte_eth_tx_buffer_flush(ports_.inside, ports_.queue, to_inside_);
}

// Decides the oldest burst prepared, at now: a packet is judged at the time of its decision,
// not of its receipt one loop pass before, so that no packet is judged before a merge record
// this core has already applied (apply_consumption charges at the pass's time).
void Worker::decide_waiting(Received &b, uint64_t now) {
    std::fill(b.now_ns, b.now_ns + kMaxBurst, now);
    Verdict verdicts[kMaxBurst];
    const uint16_t n = pipeline_->decide_prepared(verdicts);
    send(b.pkts, n, verdicts);
}

void Worker::run(uint64_t tsc0) {
    const TscClock clock = TscClock::calibrated();
    // The limiter clock starts at 1 s so that no TAT is ever 0 (the table's "free" mark).
    const uint64_t epoch_ns = 1000000000;
    // Two bursts, pipelined (Pipeline::prepare): while the queue is busy, a full burst
    // received and prepared waits while the one before it is decided and sent, so that the
    // waiting one's table misses are served meanwhile. A burst waits at most one loop pass,
    // and only when it was full: with the queue drained there is nothing to overlap, and no
    // packet is held.
    Received bursts[2];
    unsigned waiting = 0;  // the oldest burst prepared and not yet decided, if any
    rte_mbuf *returning[kMaxBurst];
    const uint8_t *frames[kMaxBurst];
    uint32_t lens[kMaxBurst], captured[kMaxBurst];
    uint64_t now_ns[kMaxBurst];

    uint64_t next_exchange_ns = 0;
    rules_->online(ports_.queue);
    while (!stop_->load(std::memory_order_relaxed)) {
        // The ruleset for this pass; the quiescent report at the end of the pass lets a
        // swapped-out one be freed (LiveRuleSet; a waiting burst keyed with it is keyed again).
        pipeline_->set_rules(rules_->current());
        const uint64_t tsc = rte_rdtsc();
        uint64_t now = epoch_ns + clock.ns(tsc - tsc0);
        if (merge_->merging() && now >= next_exchange_ns) {
            publish_consumption(now);
            next_exchange_ns = now + merge_interval_ns_;
        }
        apply_consumption(now);
        Received &in = bursts[pipeline_->prepared() > 0 ? waiting ^ 1 : waiting];
        // With software steering, what was received may all have gone to other workers (work
        // all the same), and what is decided may have come from them.
        uint16_t received, n;
        if (steering_)
            n = steering_->receive(ports_.outside, ports_.queue, in.pkts, &received);
        else
            n = received = rte_eth_rx_burst(ports_.outside, ports_.queue, in.pkts, kMaxBurst);
        if (n > 0) {
            frames_of(in.pkts, n, in.frames, in.lens, in.captured);
            pipeline_->prepare(in.frames, in.lens, n, in.now_ns, in.captured,
                               pipeline_->prepared() == 0 && n < kMaxBurst);
        }
        // A full burst waits for the next one: the queue holds more. A partial one (or none)
        // means the queue is drained, and nothing waits.
        bool worked = received > 0 || n > 0;
        while (pipeline_->prepared() == 2 || (pipeline_->prepared() == 1 && n < kMaxBurst)) {
            decide_waiting(bursts[waiting], now);
            waiting ^= 1;
            worked = true;
        }
        if (pipeline_->holding() > 0) release_held(now, false);
        pipeline_->tick(now);
        if (worked) busy_tsc_ += rte_rdtsc() - tsc;

        if (ports_.inside != ports_.outside) {
            uint16_t m = rte_eth_rx_burst(ports_.inside, ports_.queue, returning, kMaxBurst);
            if (m > 0) {
                returning_rx_ += m;
                if (pipeline_->rules().has_aggregate()) {  // replies mark their destinations
                    frames_of(returning, m, frames, lens, captured);
                    std::fill(now_ns, now_ns + m, now);
                    pipeline_->observe_returning(frames, lens, m, now_ns, captured);
                }
                if (pipeline_->proxying()) {
                    proxy_returning(returning, m, now);
                } else {
                    for (uint16_t i = 0; i < m; ++i)
                        rte_eth_tx_buffer(ports_.outside, ports_.queue, to_outside_, returning[i]);
                }
                rte_eth_tx_buffer_flush(ports_.outside, ports_.queue, to_outside_);
            }
        }
        // syn-proxy's timed-out connections, a few table slots a pass; what they held is freed.
        pipeline_->proxy_sweep(now, kProxySweepSlotsPerPass,
                               [](uint64_t h) { rte_pktmbuf_free(mbuf_of(h)); });
        pipeline_->serve_reads();
        rules_->quiescent(ports_.queue);
    }
    // A burst still waiting is decided and sent like any other.
    if (pipeline_->prepared() > 0) {
        pipeline_->set_rules(rules_->current());
        decide_waiting(bursts[waiting], epoch_ns + clock.ns(rte_rdtsc() - tsc0));
    }
    release_held(0, true);  // held frames are dropped, counted (shape_flushed)
    pipeline_->proxy_drop_held([](uint64_t h) { rte_pktmbuf_free(mbuf_of(h)); });
    pipeline_->stop_serving_reads();
    rules_->offline(ports_.queue);
    rte_eth_tx_buffer_flush(ports_.inside, ports_.queue, to_inside_);
    rte_eth_tx_buffer_flush(ports_.outside, ports_.queue, to_outside_);
    rte_eth_tx_buffer_flush(ports_.outside, ports_.queue, answers_out_);
}

}  // namespace floodgate
