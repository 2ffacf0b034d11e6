// `floodgate run` once the EAL is up: the live dataplane, one worker per lcore between two
// ports (or one), until SIGINT or SIGTERM. Its command line is run_command.cpp.
#pragma once

#include <rte_mbuf.h>

#include <cstdint>
#include <string>

#include "dataplane/api/control_protocol.h"
#include "dataplane/live/steering_stage.h"
#include "rules/load.h"

namespace floodgate {

// How the command names itself in messages.
inline constexpr const char *kRunCommand = "floodgate run";

struct RunOptions {
    std::string config;
    std::string stats;
    std::string control = kDefaultDataplaneSocket;
    int outside = 0;
    int inside = -1;  // -1: port 1 when there are two ports, else one-port mode
    double stats_interval_s = 0;
    uint64_t merge_interval_ns = 1000000;
    SteeringMode steering = SteeringMode::automatic;
    unsigned mbufs = 0;         // 0: enough for every RX ring, computed from the workers
    unsigned shape_share = 25;  // percent of the pool for packets shape rules hold
    unsigned mbuf_size = RTE_MBUF_DEFAULT_BUF_SIZE;
    std::string xdp_pin_dir;  // empty: the default (bpf/xdp_tier.h)
};

// SIGINT and SIGTERM end the run cleanly from now on.
void stop_on_signals();

// Runs until stopped, with source's rules; every DPDK resource it takes is released when it
// returns, before the EAL is. Returns the exit code (failures on stderr).
int run_dataplane(const RunOptions &options, const RulesFile &source);

}  // namespace floodgate
