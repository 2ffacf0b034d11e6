#include "dataplane/live/port_plugins.h"

#include <dlfcn.h>
#include <rte_ethdev.h>
#include <rte_version.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace floodgate {

namespace {

void *g_memif_plugin = nullptr;
std::string g_memif_path;

// The patched memif driver (dpdk/meson.build) beside this binary: the build tree's when it runs
// from there, else the installed one; "" when the build had no DPDK source.
std::string memif_plugin_path() {
    if (*FG_MEMIF_PMD == '\0') return "";
    char exe[4096] = {};
    const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    const std::string_view built_in = FG_BUILD_ROOT "/";
    if (n > 0 && std::string_view(exe, static_cast<size_t>(n)).starts_with(built_in))
        return FG_MEMIF_PMD;
    return FG_MEMIF_PMD_INSTALLED;
}

// The DPDK release the build compiled against, as rte_version() writes it: the patched driver
// reads DPDK's internal structures, which only that release is sure to share.
std::string built_dpdk_version() {
    char v[64];
    std::snprintf(v, sizeof v, "%s %d.%02d.%d%s", RTE_VER_PREFIX, RTE_VER_YEAR, RTE_VER_MONTH,
                  RTE_VER_MINOR, RTE_VER_SUFFIX);
    std::string s = v;
    if (RTE_VER_RELEASE < 16) s += std::to_string(RTE_VER_RELEASE);
    return s;
}

bool stock_memif_asked() {
    const char *e = std::getenv("FLOODGATE_STOCK_MEMIF");
    return e != nullptr && std::strcmp(e, "1") == 0;
}

}  // namespace

std::string preload_port_plugins() {
    g_memif_path = memif_plugin_path();
    if (g_memif_path.empty() || stock_memif_asked()) return "";
    if (built_dpdk_version() != rte_version())
        return std::string("memif: the patched driver was built for ") + built_dpdk_version() +
               ", this is " + rte_version() + ": DPDK's own is used (rebuild floodgate)";
    // Never unloaded: the EAL keeps what the driver registers until the process ends.
    g_memif_plugin = dlopen(g_memif_path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (g_memif_plugin == nullptr)
        return std::string("memif: cannot load the patched driver: ") + dlerror() +
               ": DPDK's own is used";
    return "";
}

std::string port_driver_note(uint16_t port) {
    rte_eth_dev_info info{};
    if (rte_eth_dev_info_get(port, &info) != 0 || info.driver_name == nullptr ||
        std::strcmp(info.driver_name, "net_memif") != 0)
        return "";
    // The burst function the port runs tells which library serves it.
    Dl_info where{};
    const void *burst = reinterpret_cast<const void *>(rte_eth_fp_ops[port].rx_pkt_burst);
    const bool patched = g_memif_plugin != nullptr && dladdr(burst, &where) != 0 &&
                         where.dli_fname != nullptr && g_memif_path == where.dli_fname;
    char line[256];
    std::snprintf(
        line, sizeof line,
        patched
            ? "port %u: net_memif with floodgate's disconnect fix (dpdk/)"
            : "port %u: DPDK's own net_memif: a peer that disconnects under "
              "traffic can crash this process (docs/operators-guide.md, \"When a port goes away\")",
        port);
    return line;
}

}  // namespace floodgate
