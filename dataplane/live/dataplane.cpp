#include "dataplane/live/dataplane.h"

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#include <cstdio>
#include <cstring>

#include "dataplane/live/port_plugins.h"
#include "dataplane/live/steering_choice.h"
#include "dataplane/pipeline/eal.h"
#include "dataplane/pipeline/merge.h"

namespace floodgate {

EalSession::EalSession(int argc, char **argv) {
    if (const std::string note = preload_port_plugins(); !note.empty())
        std::fprintf(stderr, "warning: %s\n", note.c_str());
    const int consumed = rte_eal_init(argc, argv);
    if (consumed < 0) {
        error_ = std::string("DPDK EAL initialisation failed: ") + rte_strerror(rte_errno);
        return;
    }
    consumed_ = consumed;
}

EalSession::~EalSession() {
    if (ok()) rte_eal_cleanup();
}

Dataplane::Dataplane(const DataplaneSetup &setup, LiveRuleSet *rules, std::atomic<bool> *stop)
    : setup_(setup), rules_(rules), stop_(stop) {
    static_assert(sizeof(steering_key_bits_) % sizeof(HashSeed) == 0);
    for (size_t at = 0; at < sizeof(steering_key_bits_); at += sizeof(HashSeed)) {
        const HashSeed r = random_hash_seed();
        std::memcpy(steering_key_bits_ + at, r.k, sizeof(HashSeed));
    }
    view_.workers = &workers_;
    view_.outside = setup.outside;
    view_.inside = setup.inside;
    view_.merge_interval_ns = setup.merge_interval_ns;
}

Dataplane::~Dataplane() {
    // Nothing is released under a running worker; then the members, in reverse order.
    if (running_) {
        stop_->store(true);
        wait();
    }
}

void Dataplane::PoolFree::operator()(rte_mempool *pool) const {
    rte_mempool_free(pool);
}

Dataplane::StartedPorts::~StartedPorts() {
    for (auto it = ports_.rbegin(); it != ports_.rend(); ++it) close_port(*it);
}

bool Dataplane::create_pool(std::string *error) {
    // Every RX ring full on both ports, plus a burst in flight and a cache per worker.
    // Steering's rings (software steering's, or NIC steering's for the frames the NIC did not
    // hash) hold up to a ring per worker.
    const unsigned steering = setup_.workers > 1 && setup_.steering != SteeringMode::none
                                  ? setup_.workers * SteeringRings::kRingSize
                                  : 0;
    // And what syn-proxy may hold per worker while servers answer.
    const uint64_t receiving = 2 * setup_.workers * (1024 + 1024 + kMaxBurst + 256) + 1024 +
                               steering + setup_.workers * kProxyHeldPerWorker;
    const auto n_mbufs = static_cast<unsigned>(
        setup_.mbufs != 0 ? setup_.mbufs : receiving * 100 / (100 - setup_.shape_share));
    hold_per_worker_ =
        static_cast<uint32_t>(uint64_t{n_mbufs} * setup_.shape_share / 100 / setup_.workers);
    pool_.reset(rte_pktmbuf_pool_create("fg_mbufs", n_mbufs, 256, 0,
                                        static_cast<uint16_t>(setup_.mbuf_size),
                                        static_cast<int>(rte_socket_id())));
    if (!pool_) {
        *error = std::string("cannot create the mbuf pool of ") + std::to_string(n_mbufs) +
                 " mbufs: " + rte_strerror(rte_errno) + " (not enough hugepage memory?)";
        return false;
    }
    return true;
}

std::vector<uint16_t> Dataplane::ports() const {
    if (setup_.inside == setup_.outside) return {setup_.outside};
    return {setup_.outside, setup_.inside};
}

bool Dataplane::start_port(uint16_t port, PortFeatures *features, std::string *error) {
    PortSetup s;
    s.port_id = port;
    s.n_queues = static_cast<uint16_t>(setup_.workers);
    s.steer = setup_.workers > 1 &&
              (setup_.steering == SteeringMode::automatic || setup_.steering == SteeringMode::nic);
    s.steer_prefix_bits = nic_prefix_bits(setup_.steering_prefix);
    s.by_destination = port != setup_.outside;
    s.steer_key_bits = steering_key_bits_;
    if (!setup_port(s, pool_.get(), features, error)) {
        if (rte_eth_dev_is_valid_port(port)) close_port(port);  // configured, maybe not started
        return false;
    }
    started_.add(port);
    if (port == setup_.outside) {
        outside_checksum_offload_ = features->tx_checksum_offload;
        outside_features_ = *features;
    } else {
        inside_features_ = *features;
    }
    return true;
}

bool Dataplane::choose_steering(std::string *error) {
    view_.nic_refused = outside_features_.rss_refused;
    SteeringChoice c = floodgate::choose_steering(
        setup_.steering, setup_.workers, setup_.steering_prefix, outside_features_,
        setup_.inside != setup_.outside ? &inside_features_ : nullptr);
    if (!c.error.empty()) {
        *error = "--steering nic: port " + std::to_string(setup_.outside) + " " + c.error +
                 " (--steering software steers in software)";
        return false;
    }
    view_.steering = c.steering;
    view_.steering_mode = c.mode;
    if (!c.rings) return true;
    steering_rings_ = std::make_unique<SteeringRings>(setup_.workers, SteeringRings::kRingSize,
                                                      c.steering, std::move(c.nic_hash));
    if (!steering_rings_->ok()) {
        *error = std::string("cannot create the steering rings: ") + rte_strerror(rte_errno);
        return false;
    }
    return true;
}

// Whether each worker sees both sides of the connections it would proxy: an inside port, and
// with several workers the servers' replies steered to the client's owner. Otherwise syn-proxy
// rules challenge as syn-auth does (no connection table).
bool Dataplane::proxy_sees_both_sides() const {
    return setup_.inside != setup_.outside &&
           (setup_.workers == 1 || view_.steering.replies_by_destination);
}

// Each worker's limit table, syn-proxy connection table (unless sized 0, or it would not see
// both sides), pipeline and loop, as the config at start sizes them.
bool Dataplane::create_workers(const Config &config, std::string *error) {
    const CoreSizes sizes =
        core_sizes(config, config.proxy_connections_per_core > 0 && proxy_sees_both_sides());
    const HashSeed table_seed = random_hash_seed();
    const HashSeed proxy_seed = random_hash_seed();
    const HashSeed cookie_seed = random_hash_seed();
    const CoreSeeds seeds{table_seed, proxy_seed, CookieKey{cookie_seed.k[0], cookie_seed.k[1]}};
    // Records a worker may publish per merge: one per key it admitted since the last one; and
    // what the other boxes of a cluster admitted, some syncs' worth.
    merger_ =
        std::make_unique<LiveMerger>(setup_.workers, 2 * kMaxUnpublishedKeys, kClusterRingRecords);
    if (!merger_->ok()) {
        *error = std::string("cannot create the merge rings: ") + rte_strerror(rte_errno);
        return false;
    }
    uint16_t queue = 0;
    unsigned lcore;
    RTE_LCORE_FOREACH_WORKER(lcore) {
        const int socket = static_cast<int>(rte_lcore_to_socket_id(lcore));
        cores_.push_back(std::make_unique<CoreParts>(
            rules_->current(), sizes, seeds, CoreMemory{dpdk_table_memory(socket), socket}, queue));
        if (cores_.back()->missing() == CoreParts::Missing::limit_table) {
            *error = "cannot allocate a limiter table of " +
                     std::to_string(LimitTable::bytes_for(sizes.table_entries)) +
                     " bytes for lcore " + std::to_string(lcore) + " (not enough hugepage memory?)";
            return false;
        }
        if (cores_.back()->missing() == CoreParts::Missing::proxy_table) {
            *error = "cannot allocate syn-proxy's connection table of " +
                     std::to_string(sizes.proxy_connections) + " connections for lcore " +
                     std::to_string(lcore) +
                     " (table.proxy_connections_per_core; not enough hugepage memory?)";
            return false;
        }
        Pipeline &pipeline = cores_.back()->pipeline();
        pipeline.set_hold_capacity(hold_per_worker_);
        workers_.push_back(std::make_unique<Worker>(
            WorkerPorts{setup_.outside, setup_.inside, queue, outside_checksum_offload_}, &pipeline,
            rules_, stop_, merger_.get(), setup_.merge_interval_ns, steering_rings_.get()));
        view_.lcores.push_back(lcore);
        ++queue;
        if (!workers_.back()->ok()) {
            *error = "cannot allocate TX buffers";
            return false;
        }
    }
    return true;
}

void Dataplane::enable_refusal_samples() {
    const HashSeed seed = random_hash_seed();  // the gaps' random start, per worker
    for (auto &c : cores_) c->pipeline().enable_refusal_samples(seed.k[0] + c->pipeline().core());
}

void Dataplane::take_refusal_samples(std::vector<RefusalSample> *out, uint64_t *taken,
                                     uint64_t *lost) {
    *taken = *lost = 0;
    for (auto &c : cores_) {
        RefusalSampler *s = c->pipeline().refusal_samples();
        if (s == nullptr) continue;
        RefusalSample batch[256];
        // At most a ring's worth: a worker refilling it meanwhile waits for the next take.
        for (unsigned n, got = 0; got < RefusalSampler::kSlots && (n = s->drain(batch, 256)) > 0;
             got += n)
            out->insert(out->end(), batch, batch + n);
        *taken += s->taken();
        *lost += s->lost();
    }
}

bool Dataplane::take_shared(std::vector<SharedRecord> *out) {
    bool all = true;
    for (auto &c : cores_) all &= c->pipeline().take_shared(out);
    return all;
}

void Dataplane::charge_cluster(const std::vector<Consumption> &charges) {
    BroadcastRing &ring = merger_->cluster_ring();
    for (size_t at = 0; at < charges.size(); at += kClusterRingRecords)
        ring.publish(charges.data() + at, static_cast<unsigned>(std::min<size_t>(
                                              kClusterRingRecords, charges.size() - at)));
}

int Dataplane::run_worker(void *launch) {
    const Launch *l = static_cast<const Launch *>(launch);
    l->worker->run(l->start_tsc);
    return 0;
}

void Dataplane::launch() {
    port_watch_ = std::make_unique<PortWatch>(ports());
    view_.port_watch = port_watch_.get();
    const uint64_t start_tsc = rte_rdtsc();
    launches_.clear();
    for (const std::unique_ptr<Worker> &w : workers_) launches_.push_back({w.get(), start_tsc});
    running_ = true;
    for (size_t i = 0; i < launches_.size(); ++i)
        rte_eal_remote_launch(run_worker, &launches_[i], view_.lcores[i]);
}

void Dataplane::wait() {
    rte_eal_mp_wait_lcore();
    running_ = false;
}

}  // namespace floodgate
