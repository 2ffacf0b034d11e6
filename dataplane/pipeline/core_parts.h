// What one core decides with: its limit table, syn-proxy's connection table (where it has one)
// and the pipeline over both, built from a Config's sizes in one place for the live workers,
// replay's cores and the benchmarks. What differs between them is passed in: the seeds
// (secret live, fixed in replay so that a run is the same every time) and where the memory
// comes from (the worker's NUMA socket, any socket offline, the heap in a benchmark).
#pragma once

#include <cstdint>
#include <memory>

#include "dataplane/pipeline/pipeline.h"

namespace floodgate {

// How big a core's tables are.
struct CoreSizes {
    uint64_t table_entries = 0;
    uint32_t proxy_connections = 0;  // 0: no connection table, syn-proxy rules challenge
    uint64_t proxy_server_timeout_ns = 0;
    uint64_t proxy_idle_timeout_ns = 0;
};

// The config's sizes; with_proxy_table false leaves syn-proxy's table out (a live worker that
// would not see both sides of a connection, a replay of rules without syn-proxy).
CoreSizes core_sizes(const Config &config, bool with_proxy_table);

// The secrets of one core's tables and cookies.
struct CoreSeeds {
    HashSeed table;
    HashSeed proxy;
    CookieKey cookie;
};

// Where a core's memory comes from: the limit table's allocator, and the NUMA socket of
// syn-proxy's connection table (always DPDK memory).
struct CoreMemory {
    TableMemory table = heap_table_memory();
    int socket = -1;  // SOCKET_ID_ANY
};

class CoreParts {
  public:
    // Which part could not be allocated.
    enum class Missing { nothing, limit_table, proxy_table };

    // core: the pipeline's index into the rules' per-core state (< RuleSet::cores()).
    CoreParts(const RuleSet *rules, const CoreSizes &sizes, const CoreSeeds &seeds,
              const CoreMemory &memory, unsigned core = 0);
    CoreParts(const CoreParts &) = delete;
    CoreParts &operator=(const CoreParts &) = delete;

    Missing missing() const { return missing_; }
    Pipeline &pipeline() { return *pipeline_; }
    const Pipeline &pipeline() const { return *pipeline_; }
    const LimitTable &table() const { return *table_; }

  private:
    // Released in reverse: the pipeline before the tables it uses.
    std::unique_ptr<LimitTable> table_;
    std::unique_ptr<ProxyFlows> proxy_flows_;
    std::unique_ptr<Pipeline> pipeline_;
    Missing missing_ = Missing::nothing;
};

}  // namespace floodgate
