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
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, FG_XDP_COUNTER_COUNT);
    __type(key, __u32);
    __type(value, __u64);
} counters SEC(".maps");

// The name net_af_xdp looks for: queue index -> its AF_XDP socket.
struct {
    __uint(type, BPF_MAP_TYPE_XSKMAP);
    __uint(max_entries, 64);
    __type(key, __u32);
    __type(value, __u32);
} xsks_map SEC(".maps");

static __always_inline void count(__u32 which) {
    __u64 *n = bpf_map_lookup_elem(&counters, &which);
    if (n) *n += 1;  // per CPU: no other writer
}

static __always_inline int pass_on(struct xdp_md *ctx) {
    if (standalone) return XDP_PASS;
    return bpf_redirect_map(&xsks_map, ctx->rx_queue_index, XDP_PASS);
}

// The longest entry that holds now, looking past up to FG_XDP_EXPIRED_LOOKAHEAD expired ones
// to the shorter prefixes around them (an LPM key's prefixlen bounds the match's length), so
// that an expired /32 inside a live /16 does not let the address through.
static __always_inline const struct fg_xdp_entry *holding(void *map, void *key, __u32 *len,
                                                          __u64 now) {
#pragma unroll
    for (int i = 0; i <= FG_XDP_EXPIRED_LOOKAHEAD; ++i) {
        const struct fg_xdp_entry *e = bpf_map_lookup_elem(map, key);
        if (!e) return 0;
        if (e->expires_ns == 0 || e->expires_ns > now) return e;
        if (e->prefixlen == 0) return 0;
        *len = e->prefixlen - 1;
    }
    return 0;
}

// Dropped, counted by who blocked it, or passed (an allow entry counted as such).
static __always_inline int judge(struct xdp_md *ctx, const struct fg_xdp_entry *e) {
    if (e && !e->allow) {
        count(e->origin == FG_XDP_ORIGIN_escalated ? FG_XDP_COUNTER_escalated_hits
                                                   : FG_XDP_COUNTER_block_hits);
        return XDP_DROP;
    }
    if (e) count(FG_XDP_COUNTER_allow_hits);
    count(FG_XDP_COUNTER_passed);
    return pass_on(ctx);
}

SEC("xdp")
int floodgate_xdp(struct xdp_md *ctx) {
    void *data = (void *)(long)ctx->data;
    void *end = (void *)(long)ctx->data_end;
    count(FG_XDP_COUNTER_packets);

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
        struct fg_xdp_key4 key = {.prefixlen = 32};
        __builtin_memcpy(key.addr, ip + 12, 4);
        return judge(ctx, holding(&block4, &key, &key.prefixlen, bpf_ktime_get_ns()));
    }
    if (proto == bpf_htons(ETH_P_IPV6)) {
        __u8 *ip = at;
        if ((void *)(ip + 40) > end || (ip[0] >> 4) != 6) goto unparsed;
        struct fg_xdp_key6 key = {.prefixlen = 128};
        __builtin_memcpy(key.addr, ip + 8, 16);
        return judge(ctx, holding(&block6, &key, &key.prefixlen, bpf_ktime_get_ns()));
    }
unparsed:
    count(FG_XDP_COUNTER_unparsed);
    return pass_on(ctx);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
