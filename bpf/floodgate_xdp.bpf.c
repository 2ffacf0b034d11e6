// floodgate's XDP tier: drops frames whose source's longest prefix in the maps is a block (the
// rules file's block list, the operator's block overrides, sources escalated by the dataplane;
// the allow list and allow overrides are entries too, so the longest prefix decides as in the
// dataplane), in the driver, before they cost a copy to user space. Everything else goes on:
// into the AF_XDP socket of its queue when the dataplane reads the interface through
// net_af_xdp (xsks_map), or to the kernel when attached standalone (`floodctl xdp attach`).
//
// It reads only what it needs to find the source: Ethernet, up to four 802.1Q/802.1ad tags,
// the IPv4 or IPv6 header (an IPv6 extension chain comes after the source and changes
// nothing). A frame it cannot read a source from is passed: the dataplane judges and counts
// it with its own reasons, so nothing is counted as malformed twice.
// linux/bpf.h first: the helper headers use its types.
// clang-format off
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>
// clang-format on

#include "dataplane/api/xdp.h"

// Set by the loader before the program is loaded: 1 when no AF_XDP socket takes the frames.
const volatile __u32 standalone = 0;

struct {
    __uint(type, BPF_MAP_TYPE_LPM_TRIE);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __uint(max_entries, FG_XDP_MAX_ENTRIES);
    __type(key, struct fg_xdp_key4);
    __type(value, struct fg_xdp_entry);
} block4 SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_LPM_TRIE);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __uint(max_entries, FG_XDP_MAX_ENTRIES);
    __type(key, struct fg_xdp_key6);
    __type(value, struct fg_xdp_entry);
} block6 SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __uint(max_entries, FG_XDP_MAX_ENTRIES);
    __type(key, __u32);  // the IPv4 address, network order
    __type(value, struct fg_xdp_entry);
} exact4 SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __uint(max_entries, FG_XDP_MAX_ENTRIES);
    __type(key, __u64);  // the IPv6 address's first 8 bytes, as they are in the header
    __type(value, struct fg_xdp_entry);
} exact6 SEC(".maps");

// 1 once an IPv6 prefix longer than /64 was written to block6 (dataplane/api/xdp.h).
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, __u32);
} long6 SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct fg_xdp_counters);
} counters SEC(".maps");

// The name net_af_xdp looks for: queue index -> its AF_XDP socket.
struct {
    __uint(type, BPF_MAP_TYPE_XSKMAP);
    __uint(max_entries, 64);
    __type(key, __u32);
    __type(value, __u32);
} xsks_map SEC(".maps");

static __always_inline int pass_on(struct xdp_md *ctx) {
    if (standalone) return XDP_PASS;
    return bpf_redirect_map(&xsks_map, ctx->rx_queue_index, XDP_PASS);
}

// Whether an entry holds now: the clock is read only for an entry with an expiry (most have
// none, and a clock read is a good part of the program's cost in a VM).
static __always_inline int live(const struct fg_xdp_entry *e) {
    return e->expires_ns == 0 || e->expires_ns > bpf_ktime_get_ns();
}

// The longest trie entry that holds now, looking past up to FG_XDP_EXPIRED_LOOKAHEAD expired
// ones to the shorter prefixes around them (an LPM key's prefixlen bounds the match's length),
// so that an expired /24 inside a live /16 does not let the address through.
static __always_inline const struct fg_xdp_entry *holding(void *map, void *key, __u32 *len) {
#pragma unroll
    for (int i = 0; i <= FG_XDP_EXPIRED_LOOKAHEAD; ++i) {
        const struct fg_xdp_entry *e = bpf_map_lookup_elem(map, key);
        if (!e) return 0;
        if (live(e)) return e;
        if (e->prefixlen == 0) return 0;
        *len = e->prefixlen - 1;
    }
    return 0;
}

// An exact map's entry for the address, if it holds now.
static __always_inline const struct fg_xdp_entry *exact(void *map, const void *key) {
    const struct fg_xdp_entry *e = bpf_map_lookup_elem(map, key);
    return e && live(e) ? e : 0;
}

// Dropped, counted by who blocked it, or passed (an allow entry counted as such).
static __always_inline int judge(struct xdp_md *ctx, struct fg_xdp_counters *c,
                                 const struct fg_xdp_entry *e) {
    if (e && !e->allow) {
        c->n[e->origin == FG_XDP_ORIGIN_escalated ? FG_XDP_COUNTER_escalated_hits
                                                  : FG_XDP_COUNTER_block_hits] += 1;
        return XDP_DROP;
    }
    if (e) c->n[FG_XDP_COUNTER_allow_hits] += 1;
    c->n[FG_XDP_COUNTER_passed] += 1;
    return pass_on(ctx);
}

SEC("xdp")
int floodgate_xdp(struct xdp_md *ctx) {
    void *data = (void *)(long)ctx->data;
    void *end = (void *)(long)ctx->data_end;
    __u32 zero = 0;
    struct fg_xdp_counters *c = bpf_map_lookup_elem(&counters, &zero);
    if (!c) return pass_on(ctx);        // never: a per-CPU array's one entry
    c->n[FG_XDP_COUNTER_packets] += 1;  // per CPU: no other writer

    struct ethhdr *eth = data;
    if ((void *)(eth + 1) > end) goto unparsed;
    __u16 proto = eth->h_proto;
    void *at = eth + 1;
#pragma unroll
    for (int i = 0; i < 4; ++i) {  // the dataplane's kMaxVlanTags
        if (proto != bpf_htons(ETH_P_8021Q) && proto != bpf_htons(ETH_P_8021AD) &&
            proto != bpf_htons(0x9100))
            break;
        if (at + 4 > end) goto unparsed;
        proto = *(__u16 *)(at + 2);
        at += 4;
    }

    if (proto == bpf_htons(ETH_P_IP)) {
        __u8 *ip = at;
        if ((void *)(ip + 20) > end || (ip[0] >> 4) != 4 || (ip[0] & 0xf) < 5) goto unparsed;
        // A /32 is the longest prefix there is: its exact entry decides, else the trie.
        __u32 addr;
        __builtin_memcpy(&addr, ip + 12, 4);
        const struct fg_xdp_entry *e = exact(&exact4, &addr);
        if (e) return judge(ctx, c, e);
        struct fg_xdp_key4 key = {.prefixlen = 32};
        __builtin_memcpy(key.addr, ip + 12, 4);
        return judge(ctx, c, holding(&block4, &key, &key.prefixlen));
    }
    if (proto == bpf_htons(ETH_P_IPV6)) {
        __u8 *ip = at;
        if ((void *)(ip + 40) > end || (ip[0] >> 4) != 6) goto unparsed;
        __u64 net;
        __builtin_memcpy(&net, ip + 8, 8);
        const __u32 *longer = bpf_map_lookup_elem(&long6, &zero);
        const int trie_first = longer && *longer;
        if (!trie_first) {  // the /64's exact entry decides, when it holds
            const struct fg_xdp_entry *e = exact(&exact6, &net);
            if (e) return judge(ctx, c, e);
        }
        struct fg_xdp_key6 key = {.prefixlen = 128};
        __builtin_memcpy(key.addr, ip + 8, 16);
        const struct fg_xdp_entry *t = holding(&block6, &key, &key.prefixlen);
        if (trie_first && !(t && t->prefixlen > FG_XDP_EXACT6_LEN)) {
            // Nothing longer than the /64 holds: its exact entry, if it holds, outranks t.
            const struct fg_xdp_entry *e = exact(&exact6, &net);
            if (e) return judge(ctx, c, e);
        }
        return judge(ctx, c, t);
    }
unparsed:
    c->n[FG_XDP_COUNTER_unparsed] += 1;
    return pass_on(ctx);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
