// The NIC tier's port as rte_flow sees it: each rule a NicDropRule (dataplane/live/
// nic_drop_rule.h) validated, created, queried and destroyed on the outside port. Called from
// the NIC tier's feed on the control thread, never a worker.
#pragma once

#include <cstdint>
#include <string>

#include "dataplane/service/nic_policy.h"

namespace floodgate {

// A port that refuses the COUNT action but takes DROP alone (net_tap) gets DROP alone from its
// first refusal on: its rules drop uncounted (counted() false), rather than not at all.
class NicFlowPort : public NicPort {
  public:
    explicit NicFlowPort(uint16_t port_id) : port_id_(port_id) {}
    NicAnswer validate(const Prefix &source) override;
    NicAnswer create(const Prefix &source, uint64_t *handle) override;
    bool destroy(uint64_t handle) override;
    bool query(uint64_t handle, uint64_t *hits, uint64_t *bytes) override;
    // Every rule on the port, whoever made it: what a run that did not stop cleanly left.
    NicAnswer flush();
    uint16_t port_id() const { return port_id_; }
    bool counted() const { return count_; }

  private:
    const uint16_t port_id_;
    bool count_ = true;
};

}  // namespace floodgate
