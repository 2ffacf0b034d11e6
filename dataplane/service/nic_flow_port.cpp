#include "dataplane/service/nic_flow_port.h"

#include <rte_errno.h>
#include <rte_flow.h>

namespace floodgate {

namespace {

rte_flow *flow_of(uint64_t handle) {
    return reinterpret_cast<rte_flow *>(static_cast<uintptr_t>(handle));
}

}  // namespace

NicAnswer NicFlowPort::validate(const Prefix &source) {
    const NicAnswer answer = validate_nic_drop_rule(port_id_, NicDropRule(source, count_));
    if (answer.accepted || !count_ || answer.refusal != NicRefusal::action) return answer;
    const NicAnswer uncounted = validate_nic_drop_rule(port_id_, NicDropRule(source, false));
    if (uncounted.accepted) count_ = false;
    return uncounted.accepted ? uncounted : answer;
}

NicAnswer NicFlowPort::create(const Prefix &source, uint64_t *handle) {
    const NicDropRule rule(source, count_);
    rte_flow_error error{};
    rte_flow *flow = rte_flow_create(port_id_, rule.attr(), rule.pattern(), rule.actions(), &error);
    if (flow == nullptr) return nic_refused(-rte_errno, error);
    *handle = reinterpret_cast<uintptr_t>(flow);
    return {true, NicRefusal::other, {}};
}

bool NicFlowPort::destroy(uint64_t handle) {
    rte_flow_error error{};
    return rte_flow_destroy(port_id_, flow_of(handle), &error) == 0;
}

bool NicFlowPort::query(uint64_t handle, uint64_t *hits, uint64_t *bytes) {
    if (!count_) return true;  // nothing to read: the counts stay 0
    rte_flow_query_count count{};
    const rte_flow_action action{RTE_FLOW_ACTION_TYPE_COUNT, nullptr};
    rte_flow_error error{};
    if (rte_flow_query(port_id_, flow_of(handle), &action, &count, &error) != 0) return false;
    if (count.hits_set) *hits = count.hits;
    if (count.bytes_set) *bytes = count.bytes;
    return true;
}

NicAnswer NicFlowPort::flush() {
    rte_flow_error error{};
    const int rc = rte_flow_flush(port_id_, &error);
    if (rc != 0) return nic_refused(rc, error);
    return {true, NicRefusal::other, {}};
}

}  // namespace floodgate
