#include "dataplane/pipeline/eal.h"

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_malloc.h>
#include <sched.h>

#include <unistd.h>
#include <filesystem>

namespace floodgate {

Eal::Eal(const std::vector<std::string> &args) {
    std::vector<std::string> copy;
    copy.push_back("floodgate");
    copy.insert(copy.end(), args.begin(), args.end());
    std::vector<char *> argv;
    for (auto &a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    int rc = rte_eal_init(static_cast<int>(copy.size()), argv.data());
    if (rc < 0) {
        error_ = std::string("DPDK EAL initialisation failed: ") + rte_strerror(rte_errno);
        return;
    }
    ok_ = true;
}

Eal::~Eal() {
    if (!ok_) return;
    // The EAL leaves its runtime directory behind; a per-process prefix would pile them up.
    std::string runtime_dir = rte_eal_get_runtime_dir();
    rte_eal_cleanup();
    std::error_code ignored;
    std::filesystem::remove_all(runtime_dir, ignored);
}

TableMemory dpdk_table_memory(int socket_id) {
    TableMemory m;
    m.ctx = reinterpret_cast<void *>(static_cast<intptr_t>(socket_id));
    m.alloc = [](size_t bytes, void *ctx) {
        return rte_zmalloc_socket("fg_limit_table", bytes, 128,
                                  static_cast<int>(reinterpret_cast<intptr_t>(ctx)));
    };
    m.free = [](void *p, void *) { rte_free(p); };
    return m;
}

std::vector<std::string> offline_eal_args(unsigned memory_mb) {
    cpu_set_t set;
    CPU_ZERO(&set);
    int cpu = 0;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        for (int i = 0; i < CPU_SETSIZE; ++i)
            if (CPU_ISSET(i, &set)) {
                cpu = i;
                break;
            }
    // --no-huge implies legacy memory, which excludes --in-memory; --no-shconf and a per-process
    // prefix keep parallel runs apart instead.
    return {"-l",
            std::to_string(cpu),
            "--no-huge",
            "-m",
            std::to_string(memory_mb),
            "--no-pci",
            "--no-shconf",
            "--file-prefix=fg-offline-" + std::to_string(getpid()),
            "--no-telemetry",
            "--log-level=error"};
}

}  // namespace floodgate
