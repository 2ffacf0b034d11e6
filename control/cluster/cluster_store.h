// The cluster's shared store, in Redis through hiredis 0.14: the boxes of a cluster share
// aggregate rate limits by syncing consumption. Every sync interval (~100 ms) each box's
// `floodctl daemon` pushes the packets its box admitted per shared key since its last sync and
// pulls what the other boxes pushed since then, in one round trip (one EVALSHA).
//
// Per cluster C, two keys in the one hash slot {C}:
//   fg:{C}:log    a stream, one entry per push: b = box id, d = lines "rule\tkey\tpackets\n",
//                 and with a cluster key s, t, k, m: the entry's signature (entry_signing.h;
//                 then every sync pushes an entry, empty or not: it is the box's heartbeat).
//                 (a push past kMaxEntryBytes is split into several entries at line ends).
//                 Each push trims entries older than the retention (XADD MINID ~), so a box
//                 that falls behind loses old entries rather than the stream growing without
//                 bound. Retention is box_timeout_ms within [kMinRetentionMs, kMaxRetentionMs]:
//                 ~10 s, but never shorter than a sync interval can be (the rules allow 10 s,
//                 with box_timeout at least two of them).
//   fg:{C}:boxes  a sorted set: box id -> the store's clock (ms) at its last sync. Each sync
//                 removes the members older than box_timeout and those from the store's future,
//                 and counts the rest as the live boxes (any number: the daemon caps what it
//                 tells the dataplane, control/cluster/cluster_request.h). With a cluster
//                 key the live boxes are those with a believed entry within box_timeout
//                 instead: anyone who can write to the store can add a member here.
// Each box reads the stream after its own cursor (the last entry ID it read), skipping its own
// entries; its first sync starts at the stream's end, so history from before it joined is not
// charged to it (with a cluster key it reads the box_timeout before, for the heartbeats and
// sequence numbers only). The store's clock stamps the entries' IDs and the heartbeats; the
// signed times are the boxes' own, and must agree within box_timeout.
//
// A Redis restart needs nothing: stream IDs are the store's clock in ms, so in a stream that
// came back empty every ID is above any cursor from before, and reading goes on. That assumes
// the store's clock did not go back across the restart. If it did, the new IDs start below the
// cursors: a cursor past the stream's last entry is reset to the stream's start, since all the
// new stream holds is unread. What this cannot save is a step back shorter than the time from
// the restart to a box's first sync: entries written below its cursor while others already
// passed it. With persistence the stream and its last ID come back and cursors stay valid.
//
// The store is outside input, guarded rather than trusted: a reply is read within kMaxReplyBytes
// received and kMaxReplyNodes values whatever the server sends (hiredis's own reader would
// calloc any array length it is sent; the memory held is at most about twice kMaxReplyBytes, the
// reader's buffer and the values), every value's type is checked before use, and a foreign or
// malformed entry or line is refused and counted, never delivered. The store is reached as a
// box's own ACL user, in TLS with the server's certificate verified where configured
// (control/cluster/store_auth.h, store_link.h); with a cluster key an entry is believed only
// when signed (control/cluster/entry_signing.h), and each one refused is counted by reason.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "control/cluster/entry_signing.h"
#include "control/cluster/store_auth.h"
#include "control/cluster/store_link.h"

namespace floodgate {

inline constexpr size_t kMaxRuleBytes = 64;
inline constexpr size_t kMaxKeyBytes = 128;
inline constexpr size_t kMaxBoxBytes = 64;
inline constexpr uint64_t kMaxDeltaPackets = 1ull << 40;
// Read per sync: at most kMaxEntries entries, each at most kMaxEntryBytes (box id and lines);
// a longer entry is skipped by the script and never crosses the wire.
inline constexpr uint32_t kMaxEntries = 1024;
inline constexpr size_t kMaxEntryBytes = 1 << 20;
// The script stops delivering entries before their bytes pass kMaxReplyPayloadBytes (the cursor
// stops there too and the next sync goes on), so a well-formed reply stays far below
// kMaxReplyBytes, the most the client reads before it gives up ("reply too large").
inline constexpr size_t kMaxReplyPayloadBytes = 32u << 20;
inline constexpr size_t kMaxReplyBytes = 64u << 20;
// Values in one reply: the array, the cursor, the live and skipped counts, where this box
// joined, and seven per entry (ID, box, the four signed fields, payload).
inline constexpr size_t kMaxReplyNodes = 5 + 7 * kMaxEntries;
inline constexpr uint64_t kMinRetentionMs = 10'000;
inline constexpr uint64_t kMaxRetentionMs = 60'000;
inline constexpr size_t kMaxClusterBytes = 64;
inline constexpr uint64_t kMaxBoxTimeoutMs = 86'400'000;  // a day, as the rules allow

struct ClusterDelta {  // packets one box admitted for one shared key since its last sync
    std::string rule;  // rule name (1..kMaxRuleBytes bytes, no tab or newline)
    // The key as text, e.g. "198.18.1.1/32", "*", "198.18.0.0/16>198.18.1.1/32"
    // (1..kMaxKeyBytes bytes, no tab or newline).
    std::string key;
    uint64_t packets = 0;  // 1 .. kMaxDeltaPackets
    // The box whose entry told it (another box's deltas only): the dataplane bounds each box's
    // charges on its own (dataplane/pipeline/remote_bounds.h). Not part of what a delta is.
    std::string box;
    bool operator==(const ClusterDelta &o) const {
        return rule == o.rule && key == o.key && packets == o.packets;
    }
};

struct ClusterStoreOptions {
    std::string address;  // "host:port" or "unix:/path" (rules/redis_address.h)
    std::string cluster;  // 1..kMaxClusterBytes bytes: keys fg:{<cluster>}:log and :boxes
    std::string box;      // this box's id (1..kMaxBoxBytes bytes, unique in the cluster)
    // A box not heard from for this long is no longer live (1..kMaxBoxTimeoutMs).
    uint64_t box_timeout_ms = 3000;
    // Connect, TLS handshake, and each command: the sync thread never blocks longer per attempt
    // (a sync is at most a connect, a handshake, an AUTH with an EVALSHA and, after NOSCRIPT, an
    // EVAL). A host name is resolved by the system's resolver first, outside this bound: give an
    // address where that matters.
    int timeout_ms = 200;
    // The ACL user and password sent on each connect, TLS (control/cluster/store_auth.h), and
    // the cluster key that signs entries (none: entries unsigned, and all believed; the daemon
    // never syncs so, control/cluster/cluster_sync.h: this is for the store's own tests and the
    // cost of signing beside it, perf/bench_cluster_sync.cpp).
    StoreAuth auth;
};

struct ClusterSyncResult {
    bool ok = false;          // the store answered with a well-formed reply
    std::string error;        // why not, when !ok (connection refused, timeout, wrong type, ...)
    uint32_t live_boxes = 0;  // boxes heard from within box_timeout, this one included (ok only)
    std::vector<ClusterDelta> remote;  // the other boxes' deltas since this box's last sync,
                                       // in stream order
    // Entries or lines refused as bad data in this reply (foreign fields, bad lines, oversize
    // entries, numbers out of range, a key of the wrong type, a malformed reply), and local
    // deltas outside the bounds above, which are not pushed; and entries whose signature
    // failed, also counted by reason here.
    uint64_t refused = 0;
    EntryRefusalCounts signature_refused{};
};

class ClusterStore {
  public:
    explicit ClusterStore(ClusterStoreOptions o);
    ~ClusterStore();
    ClusterStore(const ClusterStore &) = delete;
    ClusterStore &operator=(const ClusterStore &) = delete;

    // One round trip: heartbeat this box, append `local` (if non-empty) to the stream and read
    // the others' entries after this box's cursor. Never throws; on any failure the connection
    // is dropped and the next sync reconnects (one connect attempt per sync).
    //
    // `local` is sent at most once: after a failure it may or may not be in the stream (a
    // timeout can come after Redis took the command), so do not send it again. Consumption
    // from before an outage is better lost than charged to the others late, all at once.
    ClusterSyncResult sync(const std::vector<ClusterDelta> &local);

    // A key rotation (control/cluster/key_file_watch.h): entries are signed with the first of
    // `keys` from the next sync on and believed under any of them. Only for a store made with
    // keys.
    void set_keys(const ClusterKeys &keys);

    // Since construction, for status and metrics; ok + failed is the number of syncs, and
    // refused sums the results' refused. Read on the thread that calls sync().
    // Of the failed: auth_refused, the store refused the login (a wrong user or password);
    // tls_refused, TLS refused (the server's certificate, an alert, or the server ending the
    // session before its first answer, as it refuses a client's certificate). A handshake
    // not done in time (a slow store, or one with no TLS there) is a failure, not a refusal.
    struct Totals {
        uint64_t ok = 0, failed = 0, refused = 0, bytes = 0;  // bytes received from the store
        uint64_t auth_refused = 0, tls_refused = 0;
        uint64_t timeouts = 0;                 // of the failed: a deadline passed (a slow store)
        EntryRefusalCounts entries_refused{};  // by reason (with a cluster key)
    };
    const Totals &totals() const { return totals_; }

  private:
    bool exchange(const std::vector<std::string> &payloads, ClusterSyncResult *r);
    bool connect(std::string *error);
    void drop();

    ClusterStoreOptions o_;
    std::string invalid_;  // why the options cannot work, found once by the constructor
    std::string host_;     // the host name or address, or the socket's path
    int port_ = 0;         // 0 for a Unix socket
    std::string log_key_, boxes_key_;
    std::shared_ptr<const StoreTlsContext> tls_;  // with auth.tls on
    std::unique_ptr<StoreLink> link_;             // the connection, or nullptr
    bool logged_in_ = false;                      // AUTH answered OK on link_ (or not needed)
    std::string cursor_;  // the last stream ID read; empty until a sync succeeds
    std::string sha_;     // the script's SHA-1, as Redis answered SCRIPT LOAD; empty until then
    // Entries up to here were in the stream before this box joined: read for heartbeats and
    // sequence numbers, never charged. Empty once the cursor is past it.
    std::string history_until_;
    std::optional<EntrySigner> signer_;      // with a cluster key
    std::optional<EntryVerifier> verifier_;  // ... likewise
    Totals totals_;
};

// The lines of one entry's payload, appended to *out; returns how many lines were refused (a
// field count other than three, a rule or key empty, too long or not UTF-8, packets not a decimal
// in 1..kMaxDeltaPackets, a last line without its newline). A plain function, for tests and
// fuzzing.
uint64_t parse_cluster_payload(std::string_view payload, std::vector<ClusterDelta> *out);

}  // namespace floodgate
