// The kinds of answer and the reasons a refused packet gets none: one list each, never
// renumbered, shared by the dataplane (dataplane/answer/answer.h), the stats layout and the control
// plane's metric labels.
#pragma once

#include <cstdint>

namespace floodgate {

// One list, never renumbered: the enum, the counter names and the metric labels.
#define FG_ANSWER_KINDS(X) \
    X(syn_cookie)          \
    X(dns_truncated)       \
    X(tcp_rst)             \
    X(icmp_unreachable)    \
    X(syn_proxy)

enum class AnswerKind : uint8_t {
#define FG_X(name) name,
    FG_ANSWER_KINDS(FG_X)
#undef FG_X
        count
};

// Why a packet a rule refused got no answer of its rule's kind (it is dropped silently).
#define FG_NO_ANSWER_REASONS(X)                                                         \
    X(none)                                                                             \
    X(wrong_protocol)     /* the kind does not apply: a DNS answer to TCP, ...      */  \
    X(source_not_unicast) /* broadcast, multicast, unspecified or loopback source    */ \
    X(not_first_fragment) /* no L4 header to answer                                  */ \
    X(answers_rst)        /* RFC 9293: a RST is never answered with a RST            */ \
    X(answers_icmp_error) /* RFC 1122 3.2.2 / RFC 4443 2.4: never an error for one   */ \
    X(not_a_query)        /* DNS: QR set, opcode not QUERY, no single question       */ \
    X(too_short)          /* not enough bytes to quote what the answer must quote    */ \
    X(not_contiguous)     /* the frame is not in one buffer (chained mbuf)           */ \
    X(dst_not_unicast)    /* sent to multicast/broadcast: no unicast to answer from  */ \
    X(bad_tcp_options)    /* syn-proxy: a SYN whose options are malformed            */

enum class NoAnswer : uint8_t {
#define FG_X(name) name,
    FG_NO_ANSWER_REASONS(FG_X)
#undef FG_X
        count
};

}  // namespace floodgate
