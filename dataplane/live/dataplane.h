// What `floodgate run` holds in DPDK, each resource with an owner that releases it in its
// destructor, so that the order of release is the reverse of the order of declaration:
//
//   EalSession   the EAL, with floodgate's patched drivers (port_plugins.h): rte_eal_cleanup
//                once everything below is gone
//   Dataplane    the mbuf pool, the started ports, per worker lcore a limiter table and a
//                pipeline, the merge rings and the workers; its destructor stops and waits
//                for the workers first if they still run, then releases the workers, the
//                merge rings, the pipelines, the tables, closes the ports (in reverse order of
//                start) and frees the pool their RX rings filled from
//
// The LiveRuleSet the workers decide with is the caller's, declared before the Dataplane so
// that it outlives it; so is anything that runs on a port (the XDP tier), declared after it so
// that it is released before the port is closed.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dataplane/core/keyed_hash.h"
#include "dataplane/live/live_stats.h"
#include "dataplane/live/merge_rings.h"
#include "dataplane/live/port.h"
#include "dataplane/live/port_watch.h"
#include "dataplane/live/steering_stage.h"
#include "dataplane/live/worker.h"
#include "dataplane/pipeline/core_parts.h"
#include "dataplane/pipeline/refusal_samples.h"

struct rte_mempool;

namespace floodgate {

// rte_eal_init on argv as the command was given it (the EAL's options, then the
// application's after "--"); rte_eal_cleanup on destruction, when it succeeded.
class EalSession {
  public:
    EalSession(int argc, char **argv);
    ~EalSession();
    EalSession(const EalSession &) = delete;
    EalSession &operator=(const EalSession &) = delete;
    // On failure, error() says why.
    bool ok() const { return consumed_ >= 0; }
    const std::string &error() const { return error_; }
    // How many arguments the EAL took: the application's are argv[consumed()...], with
    // argv[consumed()] set to the program's name by the EAL.
    int consumed() const { return consumed_; }

  private:
    int consumed_ = -1;
    std::string error_;
};

struct DataplaneSetup {
    uint16_t outside = 0;
    uint16_t inside = 0;   // == outside in one-port mode
    unsigned workers = 1;  // one per worker lcore
    unsigned mbufs = 0;    // 0: enough for every RX ring (and a burst and a cache per worker)
    unsigned mbuf_size = 0;
    // Percent of the pool that packets held by shape rules may take, split evenly between the
    // workers; the default pool grows by it, so that receiving keeps every RX ring full.
    unsigned shape_share = 25;
    uint64_t merge_interval_ns = 1000000;
    SteeringMode steering = SteeringMode::automatic;
    SteeringOptions steering_prefix;  // steering_prefix(config): what the rules want
};

class Dataplane {
  public:
    // Owns nothing yet; the steps below create it, in this order. rules outlives this object;
    // stop ends the workers' loops (the destructor sets it if they still run).
    Dataplane(const DataplaneSetup &setup, LiveRuleSet *rules, std::atomic<bool> *stop);
    ~Dataplane();
    Dataplane(const Dataplane &) = delete;
    Dataplane &operator=(const Dataplane &) = delete;

    // Each step returns false with *error when it fails; what was created before is released
    // by the destructor.
    bool create_pool(std::string *error);
    // The ports to start, in order: the outside one, then the inside one unless it is the same.
    std::vector<uint16_t> ports() const;
    bool start_port(uint16_t port, PortFeatures *features, std::string *error);
    // Once the ports are started: how packets reach their owners (DataplaneSetup::steering,
    // and what the ports accepted). False with *error when --steering nic was refused.
    bool choose_steering(std::string *error);
    // What the rulesets are to be built with (RuleSetOptions::steering).
    const Steering &steering() const { return view_.steering; }
    // The merge rings (several workers), and per worker lcore its table, pipeline and Worker.
    // One table per worker, allocated on its socket; one secret hash seed for the process (so
    // per-core top-offender summaries can be merged), and one secret syn-auth cookie key, so
    // that every worker accepts the RST to a SYN-ACK another worker sent.
    bool create_workers(const Config &config, std::string *error);
    bool proxy_sees_both_sides() const;

    // Starts every worker on its lcore, and the watch on the ports; they run until *stop is set.
    void launch();
    // Returns once every worker has returned from its loop (after *stop was set).
    void wait();

    // For the cluster sync (dataplane/service/cluster_link.h), once the workers are created:
    // what they admitted for shared keys since the last take (false if one did not answer),
    // the other boxes' charges to them on the cluster ring (one thread only), and a table, for
    // the hash seed every core shares.
    bool take_shared(std::vector<SharedRecord> *out);
    void charge_cluster(const std::vector<Consumption> &charges);
    const LimitTable &first_table() const { return cores_.front()->table(); }

    // For the XDP tier's escalation, once the workers are created and before launch(): every
    // worker samples its refusals of escalating rules (refusal_samples.h); then, from one
    // thread, the samples since the last take and the samplers' totals.
    void enable_refusal_samples();
    void take_refusal_samples(std::vector<RefusalSample> *out, uint64_t *taken, uint64_t *lost);

    // For the stats and the main lcore's loop.
    const LiveView &view() const { return view_; }
    PortWatch *port_watch() { return port_watch_.get(); }  // once launched

  private:
    // The started ports, stopped and closed in reverse order of start.
    class StartedPorts {
      public:
        StartedPorts() = default;
        ~StartedPorts();
        StartedPorts(const StartedPorts &) = delete;
        StartedPorts &operator=(const StartedPorts &) = delete;
        void add(uint16_t port) { ports_.push_back(port); }

      private:
        std::vector<uint16_t> ports_;
    };
    struct PoolFree {
        void operator()(rte_mempool *pool) const;
    };

    // What a worker's lcore is launched with.
    struct Launch {
        Worker *worker;
        uint64_t start_tsc;  // the same for every worker, so that their clocks agree
    };
    static int run_worker(void *launch);

    DataplaneSetup setup_;
    LiveRuleSet *rules_;
    std::atomic<bool> *stop_;
    bool outside_checksum_offload_ = false;
    PortFeatures outside_features_, inside_features_;
    uint8_t steering_key_bits_[kMaxSteeringKeyBytes];  // random, for every port's RSS key
    // Released in reverse order of declaration: each after everything that uses it.
    std::unique_ptr<rte_mempool, PoolFree> pool_;
    uint32_t hold_per_worker_ = 0;  // packets a worker's shape rules may hold (shape_share)
    StartedPorts started_;
    std::unique_ptr<PortWatch> port_watch_;
    std::vector<std::unique_ptr<CoreParts>> cores_;  // one per worker
    std::unique_ptr<LiveMerger> merger_;
    std::unique_ptr<SteeringRings> steering_rings_;
    std::vector<std::unique_ptr<Worker>> workers_;
    std::vector<Launch> launches_;
    LiveView view_;
    bool running_ = false;  // launched and not yet waited for
};

}  // namespace floodgate
