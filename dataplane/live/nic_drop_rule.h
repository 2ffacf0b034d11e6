// One rte_flow rule of the NIC tier: "drop every frame from source prefix P, counting it",
// ingress, group 0: ETH / IPV4 or IPV6 (the source address under a prefix mask, nothing else) /
// END, actions DROP + COUNT / END. The narrowest pattern every rte_flow NIC parses (mlx5, ice,
// i40e's FDIR take it as it is), so what a port refuses says what the port cannot do.
//
// Built here, validated or created by the caller on the main or service lcore (never a worker:
// rte_flow calls take locks and may sleep in the PMD). What a port refuses is classed by the
// rte_flow_error type it gave, as the NIC tier counts it.
#pragma once

#include <rte_flow.h>

#include <cstdint>
#include <string>

#include "dataplane/api/prefix.h"

namespace floodgate {

// Why a port refused a rule, one list for the stats' keys and the metrics' labels.
#define FG_NIC_REFUSALS(X)                                            \
    X(item)   /* the pattern: an item, its spec, mask or range */     \
    X(action) /* DROP or COUNT, or their configuration */             \
    X(attr)   /* ingress, group, priority */                          \
    X(full)   /* no room left in the port's table (ENOSPC, ENOMEM) */ \
    X(other)  /* anything else, a port without rte_flow among them */

enum class NicRefusal : uint8_t {
#define FG_NIC_REFUSAL_ENUM(name) name,
    FG_NIC_REFUSALS(FG_NIC_REFUSAL_ENUM)
#undef FG_NIC_REFUSAL_ENUM
};
inline constexpr unsigned kNicRefusalCount = 0
#define FG_NIC_REFUSAL_COUNT(name) +1
    FG_NIC_REFUSALS(FG_NIC_REFUSAL_COUNT)
#undef FG_NIC_REFUSAL_COUNT
    ;
const char *nic_refusal_name(NicRefusal refusal);

// The longest prefixes the tier asks a NIC for: a /64 is one IPv6 host's subnet (the key of the
// XDP tier's exact map), and longer masks cost some NICs a wider key than a source needs.
inline constexpr unsigned kNicMaxPrefix4 = 32;
inline constexpr unsigned kNicMaxPrefix6 = 64;
bool nic_prefix_allowed(const Prefix &source);

// The rule's attr, pattern and actions, pointing into the object itself: neither copied nor
// moved. The source must be allowed (nic_prefix_allowed). Without `count`, DROP alone: for a
// port that has no COUNT action (net_tap: its TC gact rules are counted by the kernel's
// `tc -s filter show`, not through rte_flow).
class NicDropRule {
  public:
    explicit NicDropRule(const Prefix &source, bool count = true);
    NicDropRule(const NicDropRule &) = delete;
    NicDropRule &operator=(const NicDropRule &) = delete;

    const rte_flow_attr *attr() const { return &attr_; }
    const rte_flow_item *pattern() const { return pattern_; }
    const rte_flow_action *actions() const { return actions_; }
    const Prefix &source() const { return source_; }

  private:
    Prefix source_;
    rte_flow_attr attr_{};
    rte_flow_item_ipv4 ipv4_spec_{}, ipv4_mask_{};
    rte_flow_item_ipv6 ipv6_spec_{}, ipv6_mask_{};
    rte_flow_item pattern_[3]{};
    rte_flow_action_count count_{};
    rte_flow_action actions_[3]{};
};

// What a port answered: accepted, or refused with the reason and the PMD's message.
struct NicAnswer {
    bool accepted = false;
    NicRefusal refusal = NicRefusal::other;
    std::string message;  // the PMD's, with the errno's name
};
// The reason of a failed rte_flow call (rc < 0) from its error.
NicAnswer nic_refused(int rc, const rte_flow_error &error);

// rte_flow_validate of the rule on the port: nothing is created.
NicAnswer validate_nic_drop_rule(uint16_t port_id, const NicDropRule &rule);

}  // namespace floodgate
