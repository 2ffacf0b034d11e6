/*
 * A stand-in for a NIC's flow table, for the lab: this machine's kernel has no TC flower, so
 * net_tap cannot hold an rte_flow rule, and no other driver here has rte_flow. floodgate's
 * NIC tier (dataplane/service/nic_feed.h) programs this as it would an mlx5, ice or i40e port.
 *
 * What it takes, and nothing else (the rest refused with the error type a NIC gives):
 *   attr     ingress, group 0, priority 0            (else ATTR_*)
 *   pattern  ETH (matching nothing) / IPV4 or IPV6, the source under a prefix mask / END
 *                                                    (else ITEM, ITEM_SPEC, _MASK, _LAST)
 *   actions  DROP, with COUNT or not / END           (else ACTION, ACTION_CONF)
 * and at most flow_rules (a devarg; 8192 by default) at once: past that, create fails with
 * ENOSPC, as a full NIC table does. query(COUNT) gives a rule's hits and bytes.
 *
 * What it is not: no hardware. A matching frame is still copied out of the memif ring and then
 * freed in the receive burst, before the application sees it, so it costs this process's core
 * what a NIC would spare it; the receive counters (ipackets, ibytes) leave it out, as a NIC's
 * do. The lookup costs each received frame one binary search per prefix length in use, and
 * nothing but a load while no rule is held.
 *
 * Threads: the rte_flow calls come from one control thread at a time (a lock makes sure) and
 * never from the bursts. Each change builds a new sorted table, publishes it, and waits until
 * no receive burst can still read the old one (each queue's in_burst, as memif_disconnect()
 * does) before freeing it. A rule's counters are added to by every queue (atomics).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_byteorder.h>
#include <rte_ether.h>
#include <rte_flow_driver.h>
#include <rte_ip.h>
#include <rte_malloc.h>
#include <rte_pause.h>
#include <rte_spinlock.h>

#include "memif_flow.h"
#include "rte_eth_memif.h"

struct rte_flow {
    uint8_t family;   /* 4 or 6 */
    uint8_t len;      /* of the prefix */
    uint8_t addr[16]; /* masked; IPv4 in the first 4 bytes */
    int count;        /* whether COUNT was asked */
    uint64_t hits;    /* atomics: every queue adds */
    uint64_t bytes;
};

/* The rules of one family sorted by (len descending, addr); a run per length. */
struct memif_flow_run {
    uint8_t len;
    uint32_t start, n;
};
struct memif_flow_table {
    struct rte_flow **rules[2]; /* [0] IPv4, [1] IPv6 */
    struct memif_flow_run runs[2][129];
    uint32_t n_runs[2];
};

struct memif_flow_port {
    rte_spinlock_t lock;
    uint32_t capacity;
    uint32_t n;
    struct rte_flow **rules;        /* the n held, in creation order */
    struct memif_flow_table *table; /* read by the bursts; NULL while none is held */
};
static struct memif_flow_port flow_ports[RTE_MAX_ETHPORTS];

int memif_flow_set_rules(const char *key __rte_unused, const char *value, void *extra_args) {
    uint32_t *capacity = extra_args;
    char *end;
    unsigned long v = strtoul(value, &end, 10);

    if (*value == '\0' || *end != '\0' || v > MEMIF_FLOW_RULES_MAX) return -EINVAL;
    *capacity = (uint32_t)v;
    return 0;
}

void memif_flow_init(uint16_t port_id, uint32_t capacity) {
    struct memif_flow_port *fp = &flow_ports[port_id];

    rte_spinlock_init(&fp->lock);
    fp->capacity = capacity;
    fp->n = 0;
    fp->rules = NULL;
    fp->table = NULL;
}

static int rule_cmp(const void *a, const void *b) {
    const struct rte_flow *x = *(const struct rte_flow *const *)a;
    const struct rte_flow *y = *(const struct rte_flow *const *)b;

    if (x->len != y->len) return x->len > y->len ? -1 : 1;
    return memcmp(x->addr, y->addr, 16);
}

static struct memif_flow_table *table_build(struct memif_flow_port *fp) {
    struct memif_flow_table *t;
    uint32_t i, f, n[2] = {0, 0};

    if (fp->n == 0) return NULL;
    t = calloc(1, sizeof(*t));
    if (t == NULL) return NULL;
    for (f = 0; f < 2; f++) t->rules[f] = calloc(fp->n, sizeof(struct rte_flow *));
    if (t->rules[0] == NULL || t->rules[1] == NULL) {
        free(t->rules[0]);
        free(t->rules[1]);
        free(t);
        return NULL;
    }
    for (i = 0; i < fp->n; i++) {
        f = fp->rules[i]->family == 6;
        t->rules[f][n[f]++] = fp->rules[i];
    }
    for (f = 0; f < 2; f++) {
        qsort(t->rules[f], n[f], sizeof(struct rte_flow *), rule_cmp);
        for (i = 0; i < n[f]; i++) {
            struct memif_flow_run *run = &t->runs[f][t->n_runs[f]];

            if (i == 0 || t->rules[f][i]->len != run[-1].len) {
                run->len = t->rules[f][i]->len;
                run->start = i;
                run->n = 0;
                t->n_runs[f]++;
            } else {
                run--;
            }
            run->n++;
        }
    }
    return t;
}

static void table_free(struct memif_flow_table *t) {
    if (t == NULL) return;
    free(t->rules[0]);
    free(t->rules[1]);
    free(t);
}

/* Publishes fp's rules to the bursts and frees the table they read before. */
static int table_publish(struct rte_eth_dev *dev, struct memif_flow_port *fp) {
    struct memif_flow_table *old = fp->table, *t = table_build(fp);
    uint16_t q;

    if (t == NULL && fp->n > 0) return -ENOMEM;
    __atomic_store_n(&fp->table, t, __ATOMIC_SEQ_CST);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    /* A burst that set in_burst before the store may hold the old table: wait it out. */
    for (q = 0; q < dev->data->nb_rx_queues; q++) {
        struct memif_queue *mq = dev->data->rx_queues != NULL ? dev->data->rx_queues[q] : NULL;

        while (mq != NULL && __atomic_load_n(&mq->in_burst, __ATOMIC_ACQUIRE) != 0) rte_pause();
    }
    table_free(old);
    return 0;
}

/* Whether mask is a prefix (ones, then zeros) and how long. */
static int mask_is_prefix(const uint8_t *mask, unsigned int bytes, uint8_t *len) {
    unsigned int i, bits = 0;

    for (i = 0; i < bytes; i++) {
        uint8_t inverse = (uint8_t)~mask[i];

        if (bits != i * 8 && mask[i] != 0) return 0; /* ones after a zero */
        if ((inverse & (uint8_t)(inverse + 1)) != 0)
            return 0; /* a zero before a one in this byte */
        bits += __builtin_popcount(mask[i]);
    }
    *len = (uint8_t)bits;
    return 1;
}

static int is_zero(const void *p, size_t size) {
    const uint8_t *b = p;
    size_t i;

    for (i = 0; i < size; i++)
        if (b[i] != 0) return 0;
    return 1;
}

/* What the rule would be, or a refusal in *error. */
static int flow_parse(const struct rte_flow_attr *attr, const struct rte_flow_item pattern[],
                      const struct rte_flow_action actions[], struct rte_flow *rule,
                      struct rte_flow_error *error) {
    const struct rte_flow_item *item = pattern;
    const struct rte_flow_action *action = actions;
    const uint8_t *src, *mask;
    int drop = 0, i;

    memset(rule, 0, sizeof(*rule));
    if (attr == NULL)
        return rte_flow_error_set(error, EINVAL, RTE_FLOW_ERROR_TYPE_ATTR, NULL, "no attributes");
    if (attr->egress || !attr->ingress)
        return rte_flow_error_set(error, ENOTSUP, RTE_FLOW_ERROR_TYPE_ATTR_INGRESS, attr,
                                  "ingress only");
    if (attr->transfer)
        return rte_flow_error_set(error, ENOTSUP, RTE_FLOW_ERROR_TYPE_ATTR_TRANSFER, attr,
                                  "no transfer");
    if (attr->group != 0)
        return rte_flow_error_set(error, ENOTSUP, RTE_FLOW_ERROR_TYPE_ATTR_GROUP, attr,
                                  "group 0 only");
    if (attr->priority != 0)
        return rte_flow_error_set(error, ENOTSUP, RTE_FLOW_ERROR_TYPE_ATTR_PRIORITY, attr,
                                  "priority 0 only");

    while (item->type == RTE_FLOW_ITEM_TYPE_VOID) item++;
    if (item->type != RTE_FLOW_ITEM_TYPE_ETH)
        return rte_flow_error_set(error, ENOTSUP, RTE_FLOW_ERROR_TYPE_ITEM, item, "ETH first");
    if (item->last != NULL)
        return rte_flow_error_set(error, ENOTSUP, RTE_FLOW_ERROR_TYPE_ITEM_LAST, item, "no ranges");
    if (item->spec != NULL &&
        (item->mask == NULL || !is_zero(item->mask, sizeof(struct rte_flow_item_eth))))
        return rte_flow_error_set(error, ENOTSUP, RTE_FLOW_ERROR_TYPE_ITEM_MASK, item,
                                  "ETH matches nothing of its own");
    do item++;
    while (item->type == RTE_FLOW_ITEM_TYPE_VOID);
    if (item->type != RTE_FLOW_ITEM_TYPE_IPV4 && item->type != RTE_FLOW_ITEM_TYPE_IPV6)
        return rte_flow_error_set(error, ENOTSUP, RTE_FLOW_ERROR_TYPE_ITEM, item,
                                  "IPV4 or IPV6 after ETH");
    if (item->spec == NULL)
        return rte_flow_error_set(error, EINVAL, RTE_FLOW_ERROR_TYPE_ITEM_SPEC, item,
                                  "a source to match");
    if (item->last != NULL)
        return rte_flow_error_set(error, ENOTSUP, RTE_FLOW_ERROR_TYPE_ITEM_LAST, item, "no ranges");
    if (item->type == RTE_FLOW_ITEM_TYPE_IPV4) {
        const struct rte_flow_item_ipv4 *s = item->spec;
        const struct rte_flow_item_ipv4 *m =
            item->mask != NULL ? item->mask : &rte_flow_item_ipv4_mask;
        struct rte_flow_item_ipv4 rest = *m;

        rest.hdr.src_addr = 0;
        src = (const uint8_t *)&s->hdr.src_addr;
        mask = (const uint8_t *)&m->hdr.src_addr;
        if (!is_zero(&rest, sizeof(rest)) || !mask_is_prefix(mask, 4, &rule->len))
            return rte_flow_error_set(error, ENOTSUP, RTE_FLOW_ERROR_TYPE_ITEM_MASK, item,
                                      "the source under a prefix mask only");
        rule->family = 4;
        for (i = 0; i < 4; i++) rule->addr[i] = src[i] & mask[i];
    } else {
        const struct rte_flow_item_ipv6 *s = item->spec;
        const struct rte_flow_item_ipv6 *m =
            item->mask != NULL ? item->mask : &rte_flow_item_ipv6_mask;
        struct rte_flow_item_ipv6 rest = *m;

        memset(rest.hdr.src_addr, 0, 16);
        src = s->hdr.src_addr;
        mask = m->hdr.src_addr;
        if (!is_zero(&rest, sizeof(rest)) || !mask_is_prefix(mask, 16, &rule->len))
            return rte_flow_error_set(error, ENOTSUP, RTE_FLOW_ERROR_TYPE_ITEM_MASK, item,
                                      "the source under a prefix mask only");
        rule->family = 6;
        for (i = 0; i < 16; i++) rule->addr[i] = src[i] & mask[i];
    }
    do item++;
    while (item->type == RTE_FLOW_ITEM_TYPE_VOID);
    if (item->type != RTE_FLOW_ITEM_TYPE_END)
        return rte_flow_error_set(error, ENOTSUP, RTE_FLOW_ERROR_TYPE_ITEM, item,
                                  "nothing after the IP item");

    for (; action->type != RTE_FLOW_ACTION_TYPE_END; action++) {
        if (action->type == RTE_FLOW_ACTION_TYPE_VOID) continue;
        if (action->type == RTE_FLOW_ACTION_TYPE_DROP && !drop) {
            drop = 1;
        } else if (action->type == RTE_FLOW_ACTION_TYPE_COUNT && !rule->count) {
            const struct rte_flow_action_count *c = action->conf;

            if (c != NULL && c->id != 0)
                return rte_flow_error_set(error, ENOTSUP, RTE_FLOW_ERROR_TYPE_ACTION_CONF, action,
                                          "no shared counters");
            rule->count = 1;
        } else {
            return rte_flow_error_set(error, ENOTSUP, RTE_FLOW_ERROR_TYPE_ACTION, action,
                                      "DROP and COUNT only");
        }
    }
    if (!drop)
        return rte_flow_error_set(error, ENOTSUP, RTE_FLOW_ERROR_TYPE_ACTION, actions,
                                  "DROP is needed");
    return 0;
}

static int flow_validate(struct rte_eth_dev *dev __rte_unused, const struct rte_flow_attr *attr,
                         const struct rte_flow_item pattern[],
                         const struct rte_flow_action actions[], struct rte_flow_error *error) {
    struct rte_flow rule;

    return flow_parse(attr, pattern, actions, &rule, error);
}

static struct rte_flow *flow_create(struct rte_eth_dev *dev, const struct rte_flow_attr *attr,
                                    const struct rte_flow_item pattern[],
                                    const struct rte_flow_action actions[],
                                    struct rte_flow_error *error) {
    struct memif_flow_port *fp = &flow_ports[dev->data->port_id];
    struct rte_flow parsed, *rule;

    if (flow_parse(attr, pattern, actions, &parsed, error) < 0) return NULL;
    rte_spinlock_lock(&fp->lock);
    if (fp->n >= fp->capacity) {
        rte_spinlock_unlock(&fp->lock);
        rte_flow_error_set(error, ENOSPC, RTE_FLOW_ERROR_TYPE_HANDLE, NULL, "flow table full");
        return NULL;
    }
    if (fp->rules == NULL) fp->rules = calloc(fp->capacity, sizeof(struct rte_flow *));
    rule = malloc(sizeof(*rule));
    if (fp->rules == NULL || rule == NULL) {
        rte_spinlock_unlock(&fp->lock);
        free(rule);
        rte_flow_error_set(error, ENOMEM, RTE_FLOW_ERROR_TYPE_HANDLE, NULL, "no memory");
        return NULL;
    }
    *rule = parsed;
    fp->rules[fp->n++] = rule;
    if (table_publish(dev, fp) < 0) {
        fp->n--;
        rte_spinlock_unlock(&fp->lock);
        free(rule);
        rte_flow_error_set(error, ENOMEM, RTE_FLOW_ERROR_TYPE_HANDLE, NULL, "no memory");
        return NULL;
    }
    rte_spinlock_unlock(&fp->lock);
    return rule;
}

static int flow_destroy(struct rte_eth_dev *dev, struct rte_flow *flow,
                        struct rte_flow_error *error) {
    struct memif_flow_port *fp = &flow_ports[dev->data->port_id];
    uint32_t i;

    rte_spinlock_lock(&fp->lock);
    for (i = 0; i < fp->n && fp->rules[i] != flow; i++)
        ;
    if (i == fp->n) {
        rte_spinlock_unlock(&fp->lock);
        return rte_flow_error_set(error, ENOENT, RTE_FLOW_ERROR_TYPE_HANDLE, flow, "no such rule");
    }
    fp->rules[i] = fp->rules[--fp->n];
    /* Without memory for a smaller table the old one stays: a burst may still read it. */
    if (table_publish(dev, fp) < 0) {
        fp->rules[fp->n++] = flow;
        rte_spinlock_unlock(&fp->lock);
        return rte_flow_error_set(error, ENOMEM, RTE_FLOW_ERROR_TYPE_HANDLE, flow, "no memory");
    }
    rte_spinlock_unlock(&fp->lock);
    free(flow);
    return 0;
}

static int flow_flush(struct rte_eth_dev *dev, struct rte_flow_error *error __rte_unused) {
    struct memif_flow_port *fp = &flow_ports[dev->data->port_id];
    uint32_t i, n;

    rte_spinlock_lock(&fp->lock);
    n = fp->n;
    fp->n = 0;
    table_publish(dev, fp); /* publishes NULL: nothing to allocate */
    for (i = 0; i < n; i++) free(fp->rules[i]);
    rte_spinlock_unlock(&fp->lock);
    return 0;
}

static int flow_query(struct rte_eth_dev *dev __rte_unused, struct rte_flow *flow,
                      const struct rte_flow_action *action, void *data,
                      struct rte_flow_error *error) {
    struct rte_flow_query_count *count = data;

    if (action->type != RTE_FLOW_ACTION_TYPE_COUNT || !flow->count)
        return rte_flow_error_set(error, ENOTSUP, RTE_FLOW_ERROR_TYPE_ACTION, action,
                                  "COUNT only, on a rule with COUNT");
    if (count->reset) {
        count->hits = __atomic_exchange_n(&flow->hits, 0, __ATOMIC_RELAXED);
        count->bytes = __atomic_exchange_n(&flow->bytes, 0, __ATOMIC_RELAXED);
    } else {
        count->hits = __atomic_load_n(&flow->hits, __ATOMIC_RELAXED);
        count->bytes = __atomic_load_n(&flow->bytes, __ATOMIC_RELAXED);
    }
    count->hits_set = 1;
    count->bytes_set = 1;
    return 0;
}

static const struct rte_flow_ops memif_flow_ops = {
    .validate = flow_validate,
    .create = flow_create,
    .destroy = flow_destroy,
    .flush = flow_flush,
    .query = flow_query,
};

int memif_flow_ops_get(struct rte_eth_dev *dev __rte_unused, const struct rte_flow_ops **ops) {
    *ops = &memif_flow_ops;
    return 0;
}

void memif_flow_close(struct rte_eth_dev *dev) {
    struct memif_flow_port *fp = &flow_ports[dev->data->port_id];

    flow_flush(dev, NULL);
    free(fp->rules);
    fp->rules = NULL;
}

static struct rte_flow *run_find(struct rte_flow **rules, const struct memif_flow_run *run,
                                 const uint8_t *addr, unsigned int bytes) {
    uint8_t key[16];
    uint32_t lo = run->start, hi = run->start + run->n;
    unsigned int i;

    for (i = 0; i < bytes; i++) {
        unsigned int bit = i * 8;

        key[i] = bit >= run->len       ? 0
                 : run->len - bit >= 8 ? addr[i]
                                       : addr[i] & (uint8_t)(0xff00u >> (run->len - bit));
    }
    memset(key + bytes, 0, 16 - bytes);
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        int c = memcmp(key, rules[mid]->addr, 16);

        if (c == 0) return rules[mid];
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

/* The longest rule over the frame's source, if any: untagged IPv4 and IPv6 only. */
static struct rte_flow *flow_match(const struct memif_flow_table *t, const struct rte_mbuf *m) {
    const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);
    const uint8_t *l3 = (const uint8_t *)(eth + 1);
    unsigned int f, bytes, r;
    const uint8_t *src;

    if (eth->ether_type == RTE_BE16(RTE_ETHER_TYPE_IPV4) &&
        m->data_len >= sizeof(*eth) + sizeof(struct rte_ipv4_hdr)) {
        f = 0;
        bytes = 4;
        src = l3 + offsetof(struct rte_ipv4_hdr, src_addr);
    } else if (eth->ether_type == RTE_BE16(RTE_ETHER_TYPE_IPV6) &&
               m->data_len >= sizeof(*eth) + sizeof(struct rte_ipv6_hdr)) {
        f = 1;
        bytes = 16;
        src = l3 + offsetof(struct rte_ipv6_hdr, src_addr);
    } else {
        return NULL;
    }
    for (r = 0; r < t->n_runs[f]; r++) {
        struct rte_flow *rule = run_find(t->rules[f], &t->runs[f][r], src, bytes);

        if (rule != NULL) return rule;
    }
    return NULL;
}

uint16_t memif_flow_rx(struct memif_queue *mq, struct rte_mbuf **bufs, uint16_t n) {
    const struct memif_flow_table *t =
        __atomic_load_n(&flow_ports[mq->in_port].table, __ATOMIC_ACQUIRE);
    uint64_t dropped_bytes = 0;
    uint16_t i, kept = 0;

    if (likely(t == NULL)) return n;
    for (i = 0; i < n; i++) {
        struct rte_flow *rule = flow_match(t, bufs[i]);

        if (rule == NULL) {
            bufs[kept++] = bufs[i];
            continue;
        }
        __atomic_fetch_add(&rule->hits, 1, __ATOMIC_RELAXED);
        __atomic_fetch_add(&rule->bytes, bufs[i]->pkt_len, __ATOMIC_RELAXED);
        dropped_bytes += bufs[i]->pkt_len;
        rte_pktmbuf_free(bufs[i]);
    }
    mq->n_pkts -= n - kept;
    mq->n_bytes -= dropped_bytes;
    return kept;
}
