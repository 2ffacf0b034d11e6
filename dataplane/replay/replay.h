// `floodgate replay`'s engine: the live pipeline run over a pcap, with the clock taken from the
// packet timestamps. Deterministic: the same rules and trace give the same bytes out. Its
// command line is dataplane/commands/replay_command.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "dataplane/answer/syn_cookie.h"
#include "dataplane/api/prefix.h"

namespace floodgate {

// How frames are spread over several virtual cores: by the rules' steering prefix, as the live
// path steers them (each source prefix has one owner core: dataplane/core/steering.h); by the
// full source address, as RSS on the whole address would (an IPv6 /64 key is then shared); or
// round robin (every key shared).
enum class Spread : uint8_t { steering, hash, round_robin };

// Replay's cookie key, fixed so that the SYN-ACKs written to --answers are the same on every
// run (syn_cookie.h), and so that a capture can carry clients' answers to them (floodgate-gen
// proxied, whose ACKs complete syn-proxy's handshakes). A live dataplane draws a secret one.
inline constexpr CookieKey kReplayCookieKey = {0x243f6a8885a308d3ull, 0x13198a2e03707344ull};

struct ReplayOptions {
    std::string config;   // RULES.yaml
    std::string in;       // the capture
    std::string pass;     // where passed frames are written
    std::string drop;     // dropped ones (answered ones included); empty: not written
    std::string answers;  // what is sent in place of answered ones; empty: not written
    std::string stats;    // STATS.json, written at the end; empty: not written
    std::string report;   // REPORT.html, written at the end; empty: not written
    bool quiet = false;   // no stats summary on stdout
    unsigned workers = 1;
    Spread spread = Spread::steering;
    uint64_t merge_interval_ns = 1000000;
    // --boxes N: N boxes of a cluster, one core each, sharing their `share: cluster` rules
    // through a model of the store every cluster_sync_ns (0: the rules file's), with the store
    // away from store_down_from_ns to store_down_until_ns of the capture
    // (dataplane/replay/boxes.h).
    unsigned boxes = 1;
    uint64_t cluster_sync_ns = 0;
    uint64_t store_down_from_ns = 0;
    uint64_t store_down_until_ns = 0;
    // The protected side's prefixes. A frame from one of them went inside to outside: it is
    // forwarded unjudged, as the live path does (written to pass), and a reply among them
    // marks its destination established (Pipeline::observe_returning).
    std::vector<Prefix> inside;
    // Packets shape rules may hold per core (the live path's share of its mbuf pool).
    uint32_t shape_hold = 65536;
};

// Where the replay's failures are told, one message at a time, without the command's name.
using ReplayErrors = std::function<void(const std::string &message)>;

// Runs the replay. Returns the exit code: 0 done, 1 failed, 2 when two of the files named are
// one file (a usage error found only when they are opened); each failure is told to errors.
int replay(const ReplayOptions &options, const ReplayErrors &errors);

}  // namespace floodgate
