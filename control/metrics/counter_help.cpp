// The HELP texts of the counters named by the X-macros in dataplane/api/stats.h
// (control/metrics/counter_help.h).
#include "control/metrics/counter_help.h"

#include <iterator>

#include "dataplane/api/stats.h"

namespace floodgate {

namespace {

// The metric names come from the X-macros; the texts cannot (the lists carry comments, not
// strings), so each list has a table here, and the static_asserts below fail the build when a
// counter is added to a list without a text or removed from it with its text left behind.

struct CounterHelp {
    std::string_view name;
    const char *help;
};

constexpr CounterHelp kWorkerCounterHelp[] = {
    {"packets", "Frames decided by the worker core."},
    {"passed", "Frames passed, for any reason."},
    {"dropped", "Frames dropped, for any reason."},
    {"malformed", "Frames dropped for a bad or truncated L3/L4 header."},
    {"non_ip", "Frames that are not IPv4 or IPv6: passed unjudged."},
    {"allow_hits", "Frames whose source is in an allow prefix: passed, no rule checked."},
    {"block_hits", "Frames whose source is in a block prefix: dropped."},
    {"rate_limited", "Frames dropped because an enforcing rule refused them."},
    {"answered", "Refused frames answered in their place (by the refusing rule's action)."},
    {"answered_bytes", "Bytes of the answers sent."},
    {"answer_capped", "Refused frames left unanswered because an answer cap was reached."},
    {"syn_auth_replies",
     "RSTs that carried a valid syn-auth cookie: their source was verified, the RST dropped."},
    {"cookie_failed", "Bare RSTs to a syn-auth rule whose sequence number was no valid cookie."},
    {"merge_unshared_keys",
     "Admitted packets not shared with the other cores: the publish list was full."},
    {"merge_table_full",
     "Other cores' consumption records this core could not apply: its limit table was full."},
    {"cluster_unshared_keys",
     "Admitted packets of shared (cluster) keys not told the other boxes: the core's cluster "
     "ledger was full."},
    {"established_marked",
     "Replies going out (inside to outside) that marked or refreshed their destination as an "
     "established source, for aggregate rules' trust classes."},
    {"established_full",
     "Sources that could not be remembered as established (a reply going out) or known (admitted "
     "by an aggregate rule): the limit table was full."},
    {"marks_over_budget",
     "Source marks (established, known) not written because the core's mark budget (a quarter "
     "of the limit table over the established TTL) was spent."},
    {"delayed", "Packets a shape rule held to send at its rate (counted passed when decided)."},
    {"shaped", "Held packets sent at their release time."},
    {"shape_flushed",
     "Held packets dropped before their time: their rule was removed or changed, or the "
     "dataplane stopped."},
    {"shape_pool_full",
     "Packets a shape rule refused because the core's share of the mbuf pool for held packets "
     "was spent."},
    {"adaptive_samples",
     "Adaptive rules: response times of the protected server sampled on this core (request to "
     "first response, on connections whose handshake completed)."},
    {"adaptive_slots_busy",
     "Adaptive rules: admitted connections not sampled because their sample slot was busy (a "
     "spoofed SYN flood keeps them busy: fewer samples, never false ones)."},
    {"adaptive_unanswered",
     "Adaptive rules: sampled connections let go after 3 s without their next step (the "
     "server's reply or the client's request never seen on this core: spoofed SYNs, the inside "
     "port down, or replies reaching another worker)."},
    {"proxy_opened",
     "syn-proxy: client ACKs with a valid cookie: the connection was opened toward the server "
     "(its SYN sent)."},
    {"proxy_established",
     "syn-proxy: connections the server answered: open, translated both ways from then on."},
    {"proxy_server_refused",
     "syn-proxy: connections the server refused with a RST, which was passed on to the client."},
    {"proxy_server_timeout",
     "syn-proxy: connections the server did not answer within table.proxy_server_timeout: the "
     "client's next segment is answered with a RST."},
    {"proxy_table_full",
     "syn-proxy: SYNs challenged as syn-auth does, and valid cookie ACKs dropped, because the "
     "core's connection table was full."},
    {"proxy_cookie_failed",
     "syn-proxy: ACKs toward a syn-proxy rule of no proxied connection whose acknowledgment was no "
     "valid cookie: passed on unchanged, nothing stored."},
    {"proxy_held", "syn-proxy: client segments kept while the server answered the SYN."},
    {"proxy_held_dropped",
     "syn-proxy: client segments past the 4 a connection may keep while opening: dropped."},
    {"proxy_translated",
     "syn-proxy: segments whose sequence numbers, SACK blocks and window were rewritten between "
     "the client's and the server's sequence spaces."},
    {"proxy_untranslatable",
     "syn-proxy: segments of proxied connections with malformed TCP options: dropped."},
    {"proxy_closed", "syn-proxy: connections ended by a FIN each way or a RST."},
    {"proxy_client_resets",
     "syn-proxy: RSTs sent back to the clients of connections the server did not answer in time "
     "(out of the outside port, like answers)."},
    {"proxy_expired",
     "syn-proxy: connections ended by a timeout (idle, or the server's answer, or closing)."},
};

constexpr CounterHelp kRuleCounterHelp[] = {
    {"matched", "Packets the rule's match held for, summed over the worker cores."},
    {"passed", "Matched packets that were passed."},
    {"refused", "Matched packets this rule was the first enforcing rule to refuse."},
    {"overruled",
     "Matched packets dropped because another rule refused them (matched = passed + refused + "
     "overruled)."},
    {"shadow_refused", "Shadow mode: matched packets the rule would have refused (not held)."},
    {"table_full_shared",
     "New sources that found the limit table full and were limited in the rule's shared bucket "
     "(on_table_full: shared)."},
    {"table_full_pass",
     "New sources that found the limit table full and were passed (on_table_full: pass)."},
    {"table_full_drop",
     "New sources that found the limit table full and were refused (on_table_full: drop)."},
    {"answered", "Refused packets answered by the rule's action."},
    {"answer_capped", "Refused packets not answered: an answer cap was reached."},
    {"answer_skipped",
     "Refused packets not answered: they may not be answered (RST, ICMP error, multicast, ...)."},
    {"unanswered",
     "Refused packets the action does not answer (drop, dns-truncate's slip, a verified "
     "source over its limit). refused = answered + answer_capped + answer_skipped + unanswered."},
    {"answered_bytes", "Bytes of the rule's answers."},
    {"answered_for_bytes", "Bytes of the packets the rule answered (never below answered_bytes)."},
    {"verified", "syn-auth: sources that answered a cookie and were verified."},
    {"cookie_failed", "syn-auth: bare RSTs the rule matches whose sequence number was no cookie."},
    {"refused_established",
     "Aggregate keys: refused packets whose source was established (the server answered it)."},
    {"refused_verified", "Aggregate keys: refused packets whose source was syn-auth verified."},
    {"refused_known",
     "Aggregate keys: refused packets whose source a per-source rule knew and admitted."},
    {"refused_new",
     "Aggregate keys: refused packets from new sources (refused = the four refused_* classes)."},
    {"reserve_established",
     "Aggregate keys: packets of established sources admitted from their class's reserve (a new "
     "source would have been refused)."},
    {"reserve_verified",
     "Aggregate keys: packets of verified sources admitted from their class's reserve."},
    {"reserve_known",
     "Aggregate keys: packets of known sources admitted from their class's reserve."},
    {"delayed", "Shape rules: packets held to leave when the limit admits them."},
    {"shaped", "Shape rules: held packets sent at their release time."},
    {"shape_flushed",
     "Shape rules: held packets dropped before their time (the rule changed or was removed, or "
     "the dataplane stopped)."},
    {"shape_dropped",
     "Shape rules: packets refused because the key's queue (or the core's held share) was "
     "full."},
};

template <size_t N>
constexpr const char *find_help(const CounterHelp (&table)[N], std::string_view name) {
    for (const CounterHelp &h : table)
        if (h.name == name) return h.help;
    return nullptr;
}

#define FG_X(name)                                                 \
    static_assert(find_help(kWorkerCounterHelp, #name) != nullptr, \
                  "FG_WORKER_COUNTERS has " #name ": give it a HELP text in kWorkerCounterHelp");
FG_WORKER_COUNTERS(FG_X)
#undef FG_X
#define FG_X(name)                                               \
    static_assert(find_help(kRuleCounterHelp, #name) != nullptr, \
                  "FG_RULE_COUNTERS has " #name ": give it a HELP text in kRuleCounterHelp");
FG_RULE_COUNTERS(FG_X)
#undef FG_X
#define FG_X(name) +1
static_assert(std::size(kWorkerCounterHelp) == 0 FG_WORKER_COUNTERS(FG_X),
              "kWorkerCounterHelp has a counter that FG_WORKER_COUNTERS no longer has");
static_assert(std::size(kRuleCounterHelp) == 0 FG_RULE_COUNTERS(FG_X),
              "kRuleCounterHelp has a counter that FG_RULE_COUNTERS no longer has");
#undef FG_X

}  // namespace

const char *worker_counter_help(std::string_view name) {
    return find_help(kWorkerCounterHelp, name);
}

const char *rule_counter_help(std::string_view name) {
    return find_help(kRuleCounterHelp, name);
}

}  // namespace floodgate
