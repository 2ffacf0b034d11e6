// Owner of the DPDK environment: rte_eal_init on construction, rte_eal_cleanup on destruction,
// after everything that lives in DPDK memory has been released.
#pragma once

#include <string>
#include <vector>

#include "dataplane/core/limit_table.h"

namespace floodgate {

class Eal {
  public:
    // args exclude argv[0]. On failure ok() is false and error() says why.
    explicit Eal(const std::vector<std::string> &args);
    ~Eal();
    Eal(const Eal &) = delete;
    Eal &operator=(const Eal &) = delete;
    bool ok() const { return ok_; }
    const std::string &error() const { return error_; }

  private:
    bool ok_ = false;
    std::string error_;
};

// Limiter-table memory from DPDK's heap (hugepages when the EAL has them) on socket_id
// (SOCKET_ID_ANY: wherever there is room).
TableMemory dpdk_table_memory(int socket_id);

// EAL arguments for an offline run (replay, tests): no hugepages, no PCI, no files in
// /var/run, one lcore on a CPU this process may use, and memory_mb of anonymous memory.
std::vector<std::string> offline_eal_args(unsigned memory_mb);

}  // namespace floodgate
