/*
 * The lab's stand-in for a NIC's flow table, in floodgate's memif driver: rte_flow rules that
 * drop frames by source prefix, each counting what it dropped (memif_flow.c says what it is and
 * is not).
 */
#ifndef FLOODGATE_MEMIF_FLOW_H
#define FLOODGATE_MEMIF_FLOW_H

#include <stdint.h>

#include <ethdev_driver.h>
#include <rte_mbuf.h>

struct memif_queue;

/* The devarg: flow_rules=N, the table's capacity (i40e's flow director holds 8K). */
#define MEMIF_FLOW_RULES_ARG "flow_rules"
#define MEMIF_FLOW_RULES_DEFAULT 8192
#define MEMIF_FLOW_RULES_MAX 1048576

int memif_flow_set_rules(const char *key, const char *value, void *extra_args);
/* After the port is made: its table's capacity. */
void memif_flow_init(uint16_t port_id, uint32_t capacity);
/* At the port's close, before its queues are released: every rule destroyed. */
void memif_flow_close(struct rte_eth_dev *dev);
int memif_flow_ops_get(struct rte_eth_dev *dev, const struct rte_flow_ops **ops);

/*
 * In the receive burst, inside its guard: drops the frames a rule matches, counting them on
 * the rule, and returns how many of bufs[0..n) are left (in order, at the front). One load and
 * a branch while the port holds no rule.
 */
uint16_t memif_flow_rx(struct memif_queue *mq, struct rte_mbuf **bufs, uint16_t n);

#endif
