// Unit tests that need DPDK memory (prefix tables in rte_lpm, the RCU state of a live ruleset):
// the EAL is started once, offline (no hugepages, no PCI, no files in /var/run).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "dataplane/live/port_plugins.h"
#include "dataplane/pipeline/eal.h"

int main(int argc, char **argv) {
    ::testing::InitGoogleTest(&argc, argv);
    // floodgate's memif driver, with its stand-in flow table (test_memif_flow.cpp).
    if (const std::string note = floodgate::preload_port_plugins(); !note.empty())
        std::fprintf(stderr, "%s\n", note.c_str());
    floodgate::Eal eal(floodgate::offline_eal_args(1024));
    if (!eal.ok()) {
        std::fprintf(stderr, "%s\n", eal.error().c_str());
        return 1;
    }
    return RUN_ALL_TESTS();
}
