/* What the XDP program (bpf/floodgate_xdp.bpf.c) and the C++ side that loads and feeds it
 * (bpf/xdp_tier.h) agree on: its maps' key and value layouts and its counters. Plain C, so
 * that BPF C includes it as it is. */
#ifndef FLOODGATE_API_XDP_H
#define FLOODGATE_API_XDP_H

#include <linux/types.h>

/* Who put an entry in the maps. The dataplane (`floodgate run`) and `floodctl xdp attach
 * --config` keep the rules file's allow and block lists (rules) and the operator's overrides
 * (override) in step with what they hold; `floodctl xdp add` writes operator entries; the
 * dataplane's escalation writes escalated ones, with a TTL. One entry per prefix: an override
 * replaces a rules entry of the same prefix, and both replace operator and escalated ones. */
#define FG_XDP_ORIGINS(X) \
    X(rules)              \
    X(override)           \
    X(operator)           \
    X(escalated)

enum fg_xdp_origin {
#define FG_X(name) FG_XDP_ORIGIN_##name,
    FG_XDP_ORIGINS(FG_X)
#undef FG_X
        FG_XDP_ORIGIN_COUNT
};

/* Per-CPU counters, by index: every frame is one of passed (to the AF_XDP socket, or to the
 * kernel when the program runs standalone), unparsed (not IPv4/IPv6, or too short to read a
 * source: passed, for the dataplane to judge and count), or dropped for one of two reasons:
 * block_hits (the dataplane's name: a block list, an override, an operator's block) or
 * escalated_hits (a source a rule kept refusing). allow_hits are passed frames whose longest
 * match is an allow entry. */
#define FG_XDP_COUNTERS(X)                                                         \
    X(packets)  /* frames the program saw */                                       \
    X(passed)   /* IP frames whose source's longest live entry is none or allow */ \
    X(unparsed) /* frames without a readable IPv4/IPv6 source: passed unjudged */  \
    X(block_hits)                                                                  \
    X(escalated_hits)                                                              \
    X(allow_hits) /* of passed: an allow entry decided */

enum fg_xdp_counter {
#define FG_X(name) FG_XDP_COUNTER_##name,
    FG_XDP_COUNTERS(FG_X)
#undef FG_X
        FG_XDP_COUNTER_COUNT
};

/* All the counters of one CPU, in the one entry of the per-CPU counters map: one lookup a
 * frame counts both of its counters. */
struct fg_xdp_counters {
    __u64 n[FG_XDP_COUNTER_COUNT];
};

/* Where an entry lives: a single address (an IPv4 /32, an IPv6 /64: what escalations and most
 * operator entries are) in an exact hash map keyed by its address (exact4: the 4 bytes; exact6:
 * the /64's 8 bytes), every other prefix in the LPM trie of its family (block4, block6). The
 * program looks the address up in the exact map first: one hash lookup instead of a trie walk.
 * An IPv6 prefix longer than /64 would outrank a /64: once one is written, the writer sets
 * long6 (never cleared), and the program then asks the trie first. */
#define FG_XDP_EXACT4_LEN 32
#define FG_XDP_EXACT6_LEN 64

/* The LPM tries' keys: prefix length, then the address in network order. */
struct fg_xdp_key4 {
    __u32 prefixlen;
    __u8 addr[4];
};
struct fg_xdp_key6 {
    __u32 prefixlen;
    __u8 addr[16];
};

/* A prefix's entry: until when (CLOCK_MONOTONIC ns, what bpf_ktime_get_ns reads; 0: never),
 * who wrote it (enum fg_xdp_origin), whether it allows (1) or blocks (0), and its own prefix
 * length, so that the program can look past an expired entry to a shorter one that holds. */
struct fg_xdp_entry {
    __u64 expires_ns;
    __u8 origin;
    __u8 allow;
    __u8 prefixlen;
    __u8 pad[5];
};

/* How many expired entries, nested in one another, a lookup looks past before it gives up and
 * passes the frame (the control side removes expired entries within a second or so). */
#define FG_XDP_EXPIRED_LOOKAHEAD 4

/* Entries per block map: the rules file's block list, the overrides and the escalated sources
 * of each family together. */
#define FG_XDP_MAX_ENTRIES 262144

#endif
