/* What the XDP program (bpf/floodgate_xdp.bpf.c) and the C++ side that loads and feeds it
 * (bpf/xdp_tier.h) agree on: its maps' key and value layouts and its counters. Plain C, so
 * that BPF C includes it as it is. */
#ifndef FLOODGATE_API_XDP_H
#define FLOODGATE_API_XDP_H

#include <linux/types.h>

/* Why a source is in the block maps; the counters of dropped frames are kept per reason, with
 * the dataplane's names where it has the same one (block_hits). */
#define FG_XDP_BLOCK_REASONS(X)                                                         \
    X(block_hits)     /* the rules file's block list or an operator's block override */ \
    X(escalated_hits) /* a source a rule kept refusing, pushed down with a TTL */

enum fg_xdp_block_reason {
#define FG_X(name) FG_XDP_##name,
    FG_XDP_BLOCK_REASONS(FG_X)
#undef FG_X
        FG_XDP_BLOCK_REASON_COUNT
};

/* Per-CPU counters, by index: every frame is one of passed (to the AF_XDP socket, or to the
 * kernel when the program runs standalone), unparsed (not IPv4/IPv6, or too short to read a
 * source: passed, for the dataplane to judge and count), or one of the block reasons. */
#define FG_XDP_COUNTERS(X)                                                               \
    X(packets)  /* frames the program saw */                                             \
    X(passed)   /* IP frames whose source is in no block map (or whose entry expired) */ \
    X(unparsed) /* frames without a readable IPv4/IPv6 source: passed unjudged */        \
    X(block_hits)                                                                        \
    X(escalated_hits)

enum fg_xdp_counter {
#define FG_X(name) FG_XDP_COUNTER_##name,
    FG_XDP_COUNTERS(FG_X)
#undef FG_X
        FG_XDP_COUNTER_COUNT
};

/* The LPM tries' keys: prefix length, then the address in network order. */
struct fg_xdp_key4 {
    __u32 prefixlen;
    __u8 addr[4];
};
struct fg_xdp_key6 {
    __u32 prefixlen;
    __u8 addr[16];
};

/* A blocked prefix: until when (CLOCK_MONOTONIC ns, what bpf_ktime_get_ns reads; 0: never) and
 * why (enum fg_xdp_block_reason). */
struct fg_xdp_entry {
    __u64 expires_ns;
    __u32 reason;
    __u32 pad;
};

/* Entries per block map: the rules file's block list, the overrides and the escalated sources
 * of each family together. */
#define FG_XDP_MAX_ENTRIES 262144

#endif
