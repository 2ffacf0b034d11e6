// Counter layout shared by the dataplane (single writer per core) and every reader (replay's
// JSON, `floodgate run`'s summary, the control plane). Names come from one list each, so the
// struct fields, JSON keys and metric names can never drift apart.
//
// Each core's counters are plain: only that core writes them, and while it runs it also makes
// every copy another thread reads (Pipeline::read_stats), between two bursts. So every reading
// shows them as they stood at one instant, and these hold in it, per core and summed
// (docs/replay.md, "Counters"):
//   packets = passed + dropped
//   dropped = malformed + block_hits + rate_limited + syn_auth_replies
//   malformed = the sum of malformed_by_reason
//   answered = the sum of answers_by_kind (an answered packet is one of rate_limited)
//   per rule: matched = passed + refused + overruled
//   per rule: refused = answered + answer_capped + answer_skipped + unanswered
//   per aggregate rule (key dst or none): refused = refused_established + refused_verified +
//     refused_known + refused_new (other rules: those are 0)
//   shaping, per core and per rule: delayed = shaped + shape_flushed + held (a delayed packet
//     is counted passed when it is decided; held is how many wait now)
//   per rule: shape_dropped <= unanswered (a shape rule's refusals are never answered)
#pragma once

#include <cstdint>

#include "dataplane/api/answers.h"
#include "dataplane/api/malformed.h"

namespace floodgate {

// syn-proxy's own counters: its SynProxyStats (dataplane/pipeline/syn_proxy.h) has these fields,
// and a worker's reading copies them; to proxy_table_full the pipeline adds the SYNs it
// challenged for want of a connection table.
#define FG_SYN_PROXY_COUNTERS(X)                                                              \
    X(proxy_opened)         /* syn-proxy: valid cookie ACKs: the server was sent a SYN */     \
    X(proxy_established)    /* ... the server answered: connections proxied */                \
    X(proxy_server_refused) /* ... the server answered with a RST (passed to the client) */   \
    X(proxy_server_timeout) /* ... no answer in time: the client's next segment gets a RST */ \
    X(proxy_table_full)     /* SYNs challenged as syn-auth does, ACKs dropped: table full */  \
    X(proxy_cookie_failed)  /* ACKs of no connection whose number was no cookie: passed on */ \
    X(proxy_held)           /* client segments kept while the server answered */              \
    X(proxy_held_dropped)   /* ... past 4 a connection: dropped */                            \
    X(proxy_translated)     /* segments rewritten between the two sequence spaces */          \
    X(proxy_untranslatable) /* segments of proxied connections with malformed options: dropped */

// Per worker core.
#define FG_WORKER_COUNTERS(X)                                                                    \
    X(packets)               /* frames decided */                                                \
    X(passed)                /* frames passed, for any reason */                                 \
    X(dropped)               /* frames dropped, for any reason */                                \
    X(malformed)             /* bad L3/L4 headers: dropped */                                    \
    X(non_ip)                /* not IPv4/IPv6: passed unjudged */                                \
    X(allow_hits)            /* source in an allow prefix: passed, no rule checked */            \
    X(block_hits)            /* source in a block prefix: dropped */                             \
    X(rate_limited)          /* dropped because an enforcing rule refused */                     \
    X(answered)              /* ... of which answered (the answer sent in their place) */        \
    X(answered_bytes)        /* bytes of those answers */                                        \
    X(answer_capped)         /* refused, would have been answered: over an answer cap */         \
    X(syn_auth_replies)      /* RSTs carrying a valid cookie: source verified, dropped */        \
    X(cookie_failed)         /* bare RSTs to a syn-auth rule without a valid cookie */           \
    X(merge_unshared_keys)   /* admitted packets not shared: the publish list was full */        \
    X(merge_table_full)      /* another core's consumption found this table full */              \
    X(cluster_unshared_keys) /* admitted for a shared key, not told the cluster: ledger full */  \
    X(established_marked)    /* replies going out that (re)marked their destination */           \
    X(established_full)      /* source marks (established, known) that found no room */          \
    X(marks_over_budget)     /* ... not written: the core's mark budget was spent */             \
    X(delayed)               /* passed, held by a shape rule to leave at its release time */     \
    X(shaped)                /* ... of which sent, at their time */                              \
    X(shape_flushed)         /* ... of which dropped: their rule changed, or the core stopped */ \
    X(shape_pool_full)       /* refused by a shape rule: the core's held share was spent */      \
    X(adaptive_samples)      /* adaptive rules: server response times sampled on this core */    \
    X(adaptive_slots_busy)   /* ... connections not sampled: their sample slot was busy */       \
    X(adaptive_unanswered)   /* ... sampled connections whose next step never came (3 s) */      \
    FG_SYN_PROXY_COUNTERS(X)                                                                     \
    X(proxy_closed)        /* connections ended by a FIN each way or a RST */                    \
    X(proxy_client_resets) /* RSTs sent to the clients of failed connections */                  \
    X(proxy_expired)       /* connections ended by their timeout (idle, or the server's) */

// Per rule, per worker core.
#define FG_RULE_COUNTERS(X)                                                                   \
    X(matched)             /* packets this rule's match held for */                           \
    X(passed)              /* ... of which the packet was passed */                           \
    X(refused)             /* ... of which this rule was the first enforcing refuser */       \
    X(overruled)           /* ... of which another rule was blamed for dropping the packet */ \
    X(shadow_refused)      /* shadow mode: would have refused (the packet was not held) */    \
    X(table_full_shared)   /* new key found the table full: used the rule's shared bucket */  \
    X(table_full_pass)     /* new key found the table full: passed (on_table_full: pass) */   \
    X(table_full_drop)     /* new key found the table full: refused (on_table_full: drop) */  \
    X(answered)            /* refused and answered (the rule's action) */                     \
    X(answer_capped)       /* refused, not answered: over an answer cap */                    \
    X(answer_skipped)      /* refused, not answered: the packet may not be answered (RFC) */  \
    X(unanswered)          /* refused, not answered by the action (drop, slip, limit) */      \
    X(answered_bytes)      /* bytes of the answers */                                         \
    X(answered_for_bytes)  /* bytes of the packets they answered (never fewer) */             \
    X(verified)            /* syn-auth: sources that answered a cookie */                     \
    X(cookie_failed)       /* syn-auth: bare RSTs it matches whose number was no cookie */    \
    X(refused_established) /* aggregate keys: refused, by the class of their source */        \
    X(refused_verified)                                                                       \
    X(refused_known)                                                                          \
    X(refused_new)                                                                            \
    X(reserve_established) /* aggregate keys: admitted from their class's reserve (a new */   \
    X(reserve_verified)    /* source would have been refused), by class */                    \
    X(reserve_known)                                                                          \
    X(delayed)       /* shape: passed, held to leave when the limit admits it */              \
    X(shaped)        /* shape: ... of which sent, at their time */                            \
    X(shape_flushed) /* shape: ... of which dropped (rule changed, core stopped) */           \
    X(shape_dropped) /* shape: refused, the key's queue (or the core's share) full */

struct alignas(64) WorkerCounters {
#define FG_X(name) uint64_t name = 0;
    FG_WORKER_COUNTERS(FG_X)
#undef FG_X
    uint64_t held = 0;               // gauge: packets waiting in the core's shape queues
    uint64_t proxy_connections = 0;  // gauge: syn-proxy's connections in the core's table
    // Passed frames syn-proxy has not sent on: held (for now), dropped, or answered with a RST
    // in their place. Outside to inside, tx = passed - held - shape_flushed - proxy_withheld.
    uint64_t proxy_withheld = 0;
    uint64_t malformed_by_reason[static_cast<unsigned>(MalformedReason::count)] = {};
    uint64_t answers_by_kind[static_cast<unsigned>(AnswerKind::count)] = {};
};

// Per direction (outside to inside, inside to outside), summed over the workers; sent = tx -
// tx_failed. For outside to inside, rx is the frames decided and tx the frames passed.
struct PortCounters {
    uint64_t rx = 0;
    uint64_t tx = 0;         // handed to the TX queue
    uint64_t tx_failed = 0;  // the NIC refused them; freed, never leaked
};

struct alignas(64) RuleCounters {
#define FG_X(name) uint64_t name = 0;
    FG_RULE_COUNTERS(FG_X)
#undef FG_X
    // Shape rules' gauges: packets waiting now, and the longest wait of one sent so far (summed
    // over cores: held adds up, longest_wait_ns takes the largest).
    uint64_t held = 0;
    uint64_t longest_wait_ns = 0;
};

}  // namespace floodgate
