// floodgate's commands in DPDK telemetry (dpdk-telemetry.py, or any client of the
// dpdk_telemetry.v2 socket):
//   /floodgate/status      ruleset version, source, reload counts, workers
//   /floodgate/stats       totals of the per-core counters and the table
//   /floodgate/rules       the rule names, in order
//   /floodgate/rule,NAME   one rule's mode and counters
//   /floodgate/overrides   runtime allow/block prefixes and their expiry
// They read through the Service, on the telemetry thread; never on a worker.
#pragma once

namespace floodgate {

class Service;

// Registers the commands (once per process) and points them at service; nullptr detaches
// them (they then answer with an error) before the service is destroyed.
void attach_telemetry(Service *service);

}  // namespace floodgate
