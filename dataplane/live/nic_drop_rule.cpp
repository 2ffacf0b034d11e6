#include "dataplane/live/nic_drop_rule.h"

#include <rte_errno.h>

#include <cerrno>
#include <cstring>

namespace floodgate {

const char *nic_refusal_name(NicRefusal refusal) {
    switch (refusal) {
#define FG_NIC_REFUSAL_NAME(name) \
    case NicRefusal::name:        \
        return #name;
        FG_NIC_REFUSALS(FG_NIC_REFUSAL_NAME)
#undef FG_NIC_REFUSAL_NAME
    }
    return "other";
}

bool nic_prefix_allowed(const Prefix &source) {
    return source.family == 4 ? source.len <= kNicMaxPrefix4
                              : source.family == 6 && source.len <= kNicMaxPrefix6;
}

NicDropRule::NicDropRule(const Prefix &source, bool count) : source_(source) {
    attr_.ingress = 1;
    pattern_[0].type = RTE_FLOW_ITEM_TYPE_ETH;  // any Ethernet header: no spec, no mask
    IpAddr mask{};
    mask.fill(0xff);
    mask_addr(&mask, source.len);
    if (source.family == 4) {
        std::memcpy(&ipv4_spec_.hdr.src_addr, source.addr.data(), 4);
        std::memcpy(&ipv4_mask_.hdr.src_addr, mask.data(), 4);
        pattern_[1] = {RTE_FLOW_ITEM_TYPE_IPV4, &ipv4_spec_, nullptr, &ipv4_mask_};
    } else {
        std::memcpy(ipv6_spec_.hdr.src_addr, source.addr.data(), 16);
        std::memcpy(ipv6_mask_.hdr.src_addr, mask.data(), 16);
        pattern_[1] = {RTE_FLOW_ITEM_TYPE_IPV6, &ipv6_spec_, nullptr, &ipv6_mask_};
    }
    pattern_[2].type = RTE_FLOW_ITEM_TYPE_END;
    actions_[0].type = RTE_FLOW_ACTION_TYPE_DROP;
    if (count)
        actions_[1] = {RTE_FLOW_ACTION_TYPE_COUNT, &count_};
    else
        actions_[1].type = RTE_FLOW_ACTION_TYPE_END;
    actions_[2].type = RTE_FLOW_ACTION_TYPE_END;
}

NicAnswer nic_refused(int rc, const rte_flow_error &error) {
    NicAnswer answer;
    int errnum = rc < 0 ? -rc : rte_errno;
    switch (error.type) {
        case RTE_FLOW_ERROR_TYPE_ITEM_NUM:
        case RTE_FLOW_ERROR_TYPE_ITEM_SPEC:
        case RTE_FLOW_ERROR_TYPE_ITEM_LAST:
        case RTE_FLOW_ERROR_TYPE_ITEM_MASK:
        case RTE_FLOW_ERROR_TYPE_ITEM:
            answer.refusal = NicRefusal::item;
            break;
        case RTE_FLOW_ERROR_TYPE_ACTION_NUM:
        case RTE_FLOW_ERROR_TYPE_ACTION_CONF:
        case RTE_FLOW_ERROR_TYPE_ACTION:
            answer.refusal = NicRefusal::action;
            break;
        case RTE_FLOW_ERROR_TYPE_ATTR_GROUP:
        case RTE_FLOW_ERROR_TYPE_ATTR_PRIORITY:
        case RTE_FLOW_ERROR_TYPE_ATTR_INGRESS:
        case RTE_FLOW_ERROR_TYPE_ATTR_EGRESS:
        case RTE_FLOW_ERROR_TYPE_ATTR_TRANSFER:
        case RTE_FLOW_ERROR_TYPE_ATTR:
            answer.refusal = NicRefusal::attr;
            break;
        default:
            answer.refusal = NicRefusal::other;
    }
    // A full table is told by its errno whatever the type given with it (i40e's is ITEM).
    if (errnum == ENOSPC || errnum == ENOMEM) answer.refusal = NicRefusal::full;
    answer.message = std::string(error.message != nullptr ? error.message : "no message") + " (" +
                     std::strerror(errnum) + ")";
    return answer;
}

NicAnswer validate_nic_drop_rule(uint16_t port_id, const NicDropRule &rule) {
    rte_flow_error error{};
    int rc = rte_flow_validate(port_id, rule.attr(), rule.pattern(), rule.actions(), &error);
    if (rc == 0) return {true, NicRefusal::other, {}};
    return nic_refused(rc, error);
}

}  // namespace floodgate
