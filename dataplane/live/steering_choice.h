// How packets reach their owner worker, decided once from what the ports answered: the one
// decision `floodgate run` takes (Dataplane::choose_steering) and `floodgate probe` reports.
#pragma once

#include <string>

#include "dataplane/api/rules.h"
#include "dataplane/core/steering.h"
#include "dataplane/live/port.h"
#include "dataplane/live/steering_stage.h"

namespace floodgate {

struct SteeringChoice {
    // "one worker", "none", "nic" or "software"; empty when --steering nic was refused.
    std::string mode;
    std::string reason;  // why this mode, for an operator: "the NIC does not: ..."
    std::string error;   // --steering nic on a port that does not steer: what the port said
    Steering steering;   // what the rulesets are built with
    // Per-worker rings: software steering's, or NIC steering's for what the NIC did not hash
    // (steering_stage.h), then with nic_hash.
    bool rings = false;
    NicHash nic_hash;
};

// asked: --steering; outside: what the outside port answered (setup_port); inside: the inside
// port's, or nullptr in one-port mode.
SteeringChoice choose_steering(SteeringMode asked, unsigned workers, const SteeringOptions &wanted,
                               const PortFeatures &outside, const PortFeatures *inside);

}  // namespace floodgate
