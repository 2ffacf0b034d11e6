// What signing costs a cluster sync (issue 42): two boxes through a real redis-server, one
// pushing N shared keys per sync and the other pulling them, unsigned and then signed, the
// median of the rounds, after a warm-up. Usage: bench_cluster_sync HOST:PORT [ROUNDS]; the store
// must be one for benchmarks (it is written to under the cluster "bench-<pid>").
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "control/cluster/cluster_store.h"

namespace {

using namespace floodgate;
using Clock = std::chrono::steady_clock;

struct Medians {
    double push_ms = 0, pull_ms = 0;
};

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// One pair of boxes, `keys` deltas a round; false when a sync failed or delivered otherwise.
bool measure(const std::string &address, size_t keys, bool sign, int rounds, Medians *out) {
    const std::string cluster =
        "bench-" + std::to_string(::getpid()) + (sign ? "-s" : "-u") + std::to_string(keys);
    auto options = [&](const char *box) {
        ClusterStoreOptions o;
        o.address = address;
        o.cluster = cluster;
        o.box = box;
        o.timeout_ms = 10'000;
        if (sign) o.auth.keys.keys = {{"bench", std::string(64, 'k')}};
        return o;
    };
    ClusterStore a(options("A")), b(options("B"));
    if (!a.sync({}).ok || !b.sync({}).ok) return false;
    std::vector<ClusterDelta> local;
    for (size_t i = 0; i < keys; ++i)
        local.push_back({"syn",
                         "198." + std::to_string(18 + i / 65536) + "." +
                             std::to_string(i / 256 % 256) + "." + std::to_string(i % 256) + "/32",
                         i + 1});
    std::vector<double> push, pull;
    for (int round = 0; round < rounds; ++round) {
        const auto t0 = Clock::now();
        const ClusterSyncResult pushed = a.sync(local);
        const auto t1 = Clock::now();
        const ClusterSyncResult pulled = b.sync({});
        const auto t2 = Clock::now();
        if (!pushed.ok || !pulled.ok || pulled.remote != local) {
            std::fprintf(stderr, "round %d: %s%s\n", round, pushed.error.c_str(),
                         pulled.error.c_str());
            return false;
        }
        push.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
        pull.push_back(std::chrono::duration<double, std::milli>(t2 - t1).count());
    }
    *out = {median(push), median(pull)};
    return true;
}

}  // namespace

int main(int argc, char **argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: bench_cluster_sync HOST:PORT [ROUNDS]\n");
        return 2;
    }
    const int rounds = argc > 2 ? std::max(1, std::atoi(argv[2])) : 21;
    for (size_t keys : {size_t{1000}, size_t{100'000}}) {
        // A first run at each size pays the store's memory growing (2.3 times slower at 100,000
        // keys): a warm-up, not measured, so that the order of the two runs does not matter.
        Medians m;
        if (!measure(argv[1], keys, false, 3, &m)) return 1;
        for (bool sign : {false, true}) {
            if (!measure(argv[1], keys, sign, keys > 10'000 ? std::min(rounds, 11) : rounds, &m))
                return 1;
            std::printf("%zu keys, %s: push sync median %.2f ms, pull sync median %.2f ms\n", keys,
                        sign ? "signed" : "unsigned", m.push_ms, m.pull_ms);
        }
    }
    return 0;
}
