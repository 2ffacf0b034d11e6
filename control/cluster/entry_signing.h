// Signed entries: what a box writes to the cluster's stream carries an HMAC-SHA256, under a key
// the cluster's boxes share, over the cluster name, the box id, the box's sequence number, the
// box's time (ms since the epoch), the key's id and the payload. A box believes an entry only
// when its MAC checks under a key it holds, its sequence number is above the highest it took
// from that box, and its time is within the window (box_timeout) of its own clock: so the
// boxes' clocks must agree to well within box_timeout (NTP does).
//
// Why one shared key and not a signature per box: an HMAC costs microseconds where a signature
// check costs tens of them per entry, and every box is configured the same way (one file,
// rotated the same way everywhere). What that gives up: a box holding the key can speak for any
// other box (write entries under another's id, with a higher sequence number, which then shadows
// the real box's entries until they catch up). So a compromised box can still do what any box can,
// under any box's name; that is why what a remote entry may do is bounded even when it is signed.
//
// Two keys may be live at once (a file of one or two lines "id secret"): entries are signed
// with the first and accepted under either, so a key is rotated by adding the new one second
// on every box, then moving it first everywhere, then removing the old one, and no box ever
// refuses another's entries in between.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace floodgate {

inline constexpr size_t kMaxKeyIdBytes = 16;
inline constexpr size_t kMinClusterSecretBytes = 32;
inline constexpr size_t kMacHexBytes = 64;
// Boxes a verifier remembers at once: the dataplane is told at most 1,024 (cluster_request.h);
// past this, a compromised box inventing box ids would grow the daemon without bound.
inline constexpr size_t kMaxHeardBoxes = 4096;

struct ClusterKey {
    std::string id;      // 1..kMaxKeyIdBytes of [A-Za-z0-9_.-]
    std::string secret;  // at least kMinClusterSecretBytes (e.g. `openssl rand -hex 32`)
    bool operator==(const ClusterKey &) const = default;
};

struct ClusterKeys {
    std::vector<ClusterKey> keys;  // none (entries unsigned, as before), one or two; first signs
    bool on() const { return !keys.empty(); }
    bool operator==(const ClusterKeys &) const = default;
};

// The text of a key file (one or two lines "id secret"), refused with *why when malformed.
std::optional<ClusterKeys> parse_cluster_keys(std::string_view text, std::string *why);

// Why an entry was not believed, one list for the counters, status and metrics.
#define FG_ENTRY_REFUSALS(X)      \
    X(unsigned_entry, "unsigned") \
    X(unknown_key, "unknown_key") \
    X(bad_mac, "bad_mac")         \
    X(replayed, "replayed")       \
    X(too_old, "too_old")         \
    X(future, "future")           \
    X(too_many_boxes, "too_many_boxes")
enum class EntryRefusal {
#define FG_X(name, text) name,
    FG_ENTRY_REFUSALS(FG_X)
#undef FG_X
};
inline constexpr size_t kEntryRefusals = 0
#define FG_X(name, text) +1
    FG_ENTRY_REFUSALS(FG_X)
#undef FG_X
    ;
inline constexpr std::array<const char *, kEntryRefusals> kEntryRefusalNames = {
#define FG_X(name, text) text,
    FG_ENTRY_REFUSALS(FG_X)
#undef FG_X
};
using EntryRefusalCounts = std::array<uint64_t, kEntryRefusals>;

// The signed fields of one entry, as they travel (decimal seq and time, hex MAC).
struct EntrySignature {
    std::string seq, time_ms, key_id, mac;
};

// The MAC of one entry, in lowercase hex.
std::string entry_mac(const ClusterKey &key, std::string_view cluster, std::string_view box,
                      uint64_t seq, uint64_t time_ms, std::string_view payload);

// Signs this box's entries: sequence numbers start at the box's clock in microseconds when it
// starts, so a restarted daemon's are still above those it used before.
class EntrySigner {
  public:
    EntrySigner(std::string cluster, std::string box, ClusterKey key, uint64_t first_seq);
    EntrySignature sign(std::string_view payload, uint64_t now_ms);
    void set_key(ClusterKey key) { key_ = std::move(key); }  // the sequence goes on

  private:
    std::string cluster_, box_;
    ClusterKey key_;
    uint64_t next_seq_;
};

// Checks the other boxes' entries, and remembers, per box, the highest sequence number and the
// newest time it believed (the box's heartbeat).
class EntryVerifier {
  public:
    EntryVerifier(std::string cluster, ClusterKeys keys, uint64_t window_ms);
    // Nothing when the entry is believed (and then remembered), else why not. An entry with no
    // signed field at all is unsigned; one with some is checked, and fails as bad_mac. A genuine
    // entry from a new box while kMaxHeardBoxes are remembered is too_many_boxes.
    std::optional<EntryRefusal> check(std::string_view box, const EntrySignature &s,
                                      std::string_view payload, uint64_t now_ms);
    // Boxes (other than this one) with a believed entry within the window; forgets the others
    // (any entry of theirs from before is refused as too old, so nothing can be replayed).
    uint32_t live_others(uint64_t now_ms);
    // A rotation: the boxes' sequence numbers and heartbeats are kept, so nothing believed
    // under the old keys can be replayed under the new ones.
    void set_keys(ClusterKeys keys) { keys_ = std::move(keys); }

  private:
    struct Heard {
        uint64_t seq = 0, time_ms = 0;
    };
    std::string cluster_;
    ClusterKeys keys_;
    uint64_t window_ms_;
    std::unordered_map<std::string, Heard> heard_;
};

}  // namespace floodgate
