// Blocks announced upstream as BGP FlowSpec through a local gobgpd, so that the upstream router
// drops a flood before it fills the link. Each rule matches a source, and optionally a
// destination, an IP protocol and a destination port range (RFC 8955; RFC 8956 for IPv6); its
// action is discard (traffic-rate 0, RFC 8955 section 7.3). With rtbh, a rule whose source is
// one address is also announced as that host route with the BLACKHOLE community (65535:666,
// RFC 7999), for routers that take no FlowSpec: also rather than instead, because a router
// that takes both keeps the precise rule, while source-based RTBH (RFC 5635, with uRPF) drops
// everything from the address.
//
// gobgpd is spoken to through its CLI, `gobgp`, one process per route, run without a shell:
// GoBGP's API is gRPC, Debian packages no C++ stubs for its protos, and the CLI is its
// documented client. A call costs ~22 ms, so a reconcile is paced by its changes (~45 a second).
//
// gobgpd is floodctl's own: every local path in its global RIB's flowspec families, and every
// local unicast path with the BLACKHOLE community, is floodctl's, and one that is not desired
// is stale and withdrawn. Paths received from its peers are skipped but still read, within the
// bound below: its configuration should accept nothing from them, with an import policy that
// rejects every neighbor (docs/cluster.md's). Not default-import-policy = "reject-route": gobgpd
// applies its global import policy to the paths its API adds too, and refuses all of ours.
//
// The RIB is read with `gobgp --target API -j global rib -a FAMILY` for ipv4-flowspec,
// ipv6-flowspec, ipv4 and ipv6, whether rtbh is on or not (so that turning it off withdraws
// the blackholes of an earlier run). The output is one object keyed by the route's text; each
// value lists paths, and a path received from a peer has a "neighbor-ip":
//   {"[source: 198.18.66.6/32][protocol: ==udp]": [{"nlri": {"value": [
//       {"type": 2, "value": {"prefix": "198.18.66.6/32"}},
//       {"type": 3, "value": [{"op": 129, "value": 17}]}]}, "attrs": [...]}]}
//   {"198.18.66.6/32": [{"nlri": {"prefix": "198.18.66.6/32"},
//       "attrs": [{"type": 8, "communities": [4294902426]}, ...]}]}
// A rule is read from the NLRI's components (RFC 8955 section 4.2: 1 destination, 2 source,
// 3 protocol, 5 destination port; an IPv6 prefix has an "offset"), never from the key, which
// loses information (protocol 0 prints as "==unknown").
//
// gobgp's output is outside input, guarded rather than trusted: read up to kMaxOutputBytes
// (past it the call failed), parsed with nesting limited to kMaxJsonDepth, and every value's
// type checked before use.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "dataplane/api/prefix.h"
#include "dataplane/api/rules.h"

namespace floodgate {

// A rule of the largest shape is ~770 bytes of gobgp's JSON (v4 or v6, measured): a family's
// read of kMaxAnnounced rules is ~1.5 MB, under half the cap, leaving room for paths from peers.
inline constexpr size_t kMaxAnnounced = 2000;
inline constexpr size_t kMaxOutputBytes = 4u << 20;
inline constexpr int kMaxJsonDepth = 32;  // gobgp's deepest is 11 (a flowspec path's MP_REACH)

struct FlowspecRule {
    Prefix source;                              // family 4 or 6
    std::optional<Prefix> destination;          // the source's family
    std::optional<uint8_t> protocol;            // IP protocol number
    std::optional<PortRange> destination_port;  // lo <= hi; lo == hi: one port
    // What asked for it ("escalated by dns", "block"), for errors and status only: the match
    // alone is the rule's identity.
    std::string origin;

    bool operator==(const FlowspecRule &o) const;
};

struct FlowspecOptions {
    std::string gobgp = "gobgp";          // the CLI, looked up on PATH
    std::string api = "127.0.0.1:50051";  // gobgpd's gRPC API (its --api-hosts), as --target
    size_t max_announced = 1000;          // rules in the RIB at once (kMaxAnnounced at most)
    // New announcements per second: a token bucket whose burst is this rate, at least 1 (0:
    // nothing new is announced). Withdrawals are never held back: they take load off the router.
    double max_new_per_s = 20;
    bool rtbh = false;
    std::string rtbh_next_hop4 = "192.0.2.1";  // TEST-NET-1, which RTBH routers route to null
    std::string rtbh_next_hop6 = "100::1";     // the discard-only prefix (RFC 6666)
    int call_timeout_ms = 2000;  // a CLI call is killed past this (it gives up itself after 1 s)
    // What a router must never be told to drop, however a rule came to be desired: a source
    // prefix shorter than these (an IPv4 /16 is the most one organisation commonly holds, an
    // IPv6 /32 the least an RIR allocates to an ISP: shorter ones span networks that have
    // nothing to do with the flood, and the box cannot see what a router drops), and a source
    // that overlaps never_block (the box's own addresses, the operator's infrastructure:
    // dropped upstream, the box or the network could not be reached to lift it).
    uint8_t min_source_len4 = 16;
    uint8_t min_source_len6 = 32;
    std::vector<Prefix> never_block;
    // The RIB is read again at least this often, so that routes lost to a gobgpd restart that
    // no failed call revealed are announced again within it. Reading the four families holding
    // 1,000 rules takes ~250 ms.
    int resync_interval_ms = 30'000;
};

// One family's read (`gobgp -j global rib -a FAMILY`): its local paths; received ones skipped.
enum class RibFamily : uint8_t { flowspec4, flowspec6, unicast4, unicast6 };
struct RibRead {
    std::vector<FlowspecRule> rules;  // flowspec: paths of the shape flowspec_words makes
    std::vector<Prefix> blackholes;   // unicast: paths with the BLACKHOLE community
    size_t foreign = 0;  // paths of another shape, or a blackhole whose prefix does not read
};

class FlowspecExporter {
  public:
    explicit FlowspecExporter(FlowspecOptions o);

    // Makes the RIB hold `desired`, most important first: withdraws what is announced and no
    // longer desired, then announces the first max_announced desired rules that are not yet,
    // within the rate; a desired rule past max_announced that is announced makes way for one
    // before it when a token allows. What does not fit is withheld, and tried again on a later
    // call. Invalid rules (a prefix with host bits, families that differ, lo > hi) are skipped.
    //
    // The first call, a call after a failed one, and a call resync_interval_ms after the last
    // read, first read the RIB: what is desired there is kept as it is, the rest is withdrawn
    // (stale_withdrawn), so a crash of floodctl never leaves a block behind, and its restart
    // does not withdraw and announce again what is still desired. A local path that does not
    // read back as ours (a component or operator flowspec_words never writes, a blackhole whose
    // prefix does not parse) is removed with all its family's local paths: `del all`.
    //
    // Checked where it lands: after its changes, each family changed is read back, and a
    // route added that the RIB does not hold is counted (missing_after_add) and is the
    // last_error; it stays asked for, missing, until the next resync adds it again.
    //
    // Desired rules are refused, counted by reason, when their source is shorter than
    // min_source_len4 or 6 or overlaps a never_block prefix.
    //
    // Never throws. A failed call (gobgpd down or slow, the CLI missing) ends the reconcile,
    // counted; the next one reads the RIB again. A reconcile takes ~22 ms per route changed,
    // per RIB read and per family read back, and at most one call_timeout_ms more.
    void reconcile(const std::vector<FlowspecRule> &desired, uint64_t now_ns);

    // Withdraws everything (a clean stop): `del all` for each flowspec family that holds rules,
    // and each blackhole route. Reads the RIB first when it is not known.
    void withdraw_all();

    // Counters since construction; gauges (size_t) as of the last call. What floodctl asked
    // gobgpd to hold and what its RIB was read back to hold are apart: gobgp's CLI exits 0 when
    // gobgpd's import policy refuses the route (a default-import-policy of reject-route does),
    // and only the read-back shows it.
    struct Counters {
        uint64_t announced = 0;  // routes added: rules, and blackholes with rtbh
        uint64_t withdrawn = 0;  // routes removed that were announced or found desired
        // Routes found in the RIB that were not desired, or went with a foreign path's family.
        uint64_t stale_withdrawn = 0;
        // CLI calls that failed or timed out, or whose output was too long or did not read.
        uint64_t failed_calls = 0;
        // Routes added that were not in the RIB when it was read back after the add.
        uint64_t missing_after_add = 0;
        size_t asked = 0;             // rules floodctl asked gobgpd to hold
        size_t in_rib = 0;            // of those, the rules the RIB held when read back
        size_t missing = 0;           // asked - in_rib: refused by gobgpd, or lost
        size_t blackholes_asked = 0;  // RTBH routes, alike
        size_t blackholes_in_rib = 0;
        size_t blackholes_missing = 0;
        // Desired rules not in the RIB: past max_announced, or within it but waiting for the
        // rate (or for the retry of a failed call). Gauges rather than counts per call, which
        // would grow with how often reconcile is called.
        size_t withheld_limit = 0;
        size_t withheld_rate = 0;
        size_t invalid = 0;  // desired rules skipped as invalid
        // Desired rules refused by the options above: a source shorter than min_source_len4
        // or 6, and a source that overlaps a never_block prefix.
        size_t refused_short_source = 0;
        size_t refused_never_block = 0;
    };
    const Counters &counters() const { return counters_; }
    // Each rule asked for, most recently read back or not: the rule's words, its origin, and
    // whether the RIB held it.
    struct RuleState {
        std::string match;  // flowspec_words joined ("match source ... then discard")
        std::string origin;
        bool in_rib = false;
    };
    std::vector<RuleState> rule_states() const;
    // Why the last failed call failed ("" until one has); the daemon logs it.
    const std::string &last_error() const { return last_error_; }

  private:
    struct Desired;
    bool apply(const Desired &d, uint64_t now_ns);  // false: a call failed, the rest waits
    bool read_family(RibFamily f, RibRead *read);
    bool read_rib();
    bool read_back(uint8_t families);
    bool withdraw_rule(std::map<std::string, FlowspecRule>::iterator it, uint64_t *count);
    bool withdraw_undesired(const Desired &d, uint64_t *count);
    bool withdraw_least(const Desired &d);
    bool set_blackholes(const std::set<Prefix> &wanted, uint64_t *withdrawn);
    bool call(std::vector<std::string> args, std::string *out);
    void tally(const Desired *d);
    double burst() const;
    void refill(uint64_t now_ns);

    FlowspecOptions o_;
    bool synced_ = false;  // announced_ and blackholes_ are what the RIB holds
    uint64_t synced_ns_ = 0;
    double tokens_ = 0;
    std::optional<uint64_t> refill_ns_;
    std::map<std::string, FlowspecRule> announced_;  // by match (flowspec_words joined)
    std::set<Prefix> blackholes_;
    // What the RIB was last read to hold: match keys of rules, and blackholes.
    std::set<std::string> held_;
    std::set<Prefix> blackholes_held_;
    uint8_t touched_ = 0;               // families changed since the last read (1 << RibFamily)
    std::set<std::string> just_added_;  // rules added since the last read
    Counters counters_;
    std::string last_error_;
};

// The gobgp CLI's words for one rule, after `global rib -a ipv4-flowspec add` (or ipv6-, or
// del): {"match", "source", "198.18.66.6/32", "destination", "198.18.1.1/32", "protocol",
// "==17", "destination-port", "==53" (or ">=1000&<=2000"), "then", "discard"}.
std::vector<std::string> flowspec_words(const FlowspecRule &r);

// False with *error when the output is not JSON of the shape above (a path that is, but is not
// in a shape of ours, counts as foreign). A plain function, for tests and fuzzing.
bool parse_rib(std::string_view text, RibFamily family, RibRead *out, std::string *error);

}  // namespace floodgate
