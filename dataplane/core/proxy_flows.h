// syn-proxy's connections on their owner core: what floodgate knows of each proxied connection
// from the client's valid ACK until both sides have closed, and nothing before (the cookie
// carries that). Fixed capacity, set at start; no allocation afterwards; one writer (the core).
//
// The index is DPDK's rte_hash (cuckoo, 8 entries a bucket), keyed by the connection as the
// client sends it, with a keyed hash (keyed_hash.h) under a secret drawn at start and passed
// in every call (rte_hash's own CRC and jhash are unkeyed), so that a client cannot choose
// ports whose connections pile into one bucket. Its positions index an
// array of ProxyFlow, so a lookup is one rte_hash_lookup plus one line of state.
//
// A connection's life: opening (the server was sent its SYN; the client's early segments wait
// in held[]) -> open (the server answered: segments are rewritten both ways) -> ended by a RST
// either way, by a FIN each way, or by sweep() after its timeout: server_timeout while
// opening, idle_timeout once open.
#pragma once

#include <cstdint>
#include <memory>

#include "dataplane/core/keyed_hash.h"
#include "dataplane/core/parse.h"
#include "dataplane/core/tcp_options.h"

struct rte_hash;

namespace floodgate {

// A connection as its client sends it (source = client); zeroed padding, compared as bytes.
struct FlowKey {
    uint8_t client[16];
    uint8_t server[16];
    uint16_t client_port;
    uint16_t server_port;
    uint8_t family;
    uint8_t pad[3];
};
static_assert(sizeof(FlowKey) == 40);

// The key of the connection a segment belongs to, from either side: from_client says which.
FlowKey flow_key(const PacketInfo &p, bool from_client);

// closing: both sides sent a FIN; kept for one more server timeout so that the last ACKs and
// any retransmitted FIN are still translated. failed: the server did not answer in time (or
// refused); kept for one more server timeout so that the client's next segment can be
// answered with a RST.
enum class FlowState : uint8_t { free, opening, open, closing, failed };

inline constexpr unsigned kHeldPerFlow = 4;  // client segments waiting for the server's SYN-ACK

struct ProxyFlow {
    FlowKey key;
    FlowState state = FlowState::free;
    uint8_t fins = 0;  // kFinFromClient | kFinFromServer
    uint8_t held_count = 0;
    ProxiedOptions client;  // what the client's SYN asked for (from the cookie)
    uint32_t client_isn = 0;
    uint32_t cookie = 0;         // floodgate's ISN toward the client
    uint32_t delta = 0;          // cookie - the server's ISN, once open
    uint16_t client_window = 0;  // the window field of the client's ACK (its shift)
    // Window scales as RFC 7323 has them: a shift of 0 is scaling on, kNoWindowScale off. The
    // client's is client.wscale.
    uint8_t server_wscale = kNoWindowScale;     // the server's SYN-ACK's, once open
    uint8_t announced_wscale = kNoWindowScale;  // what floodgate's SYN-ACK told the client
    uint64_t last_ns = 0;              // last segment either way (opening: when the SYN went out)
    uint64_t held[kHeldPerFlow] = {};  // the caller's handles (mbufs)
};
inline constexpr uint8_t kFinFromClient = 1;
inline constexpr uint8_t kFinFromServer = 2;

struct ProxyFlowsStats {
    uint64_t opened = 0;
    uint64_t full = 0;       // opens refused: every slot taken
    uint64_t closed = 0;     // by a RST, or a FIN each way (ended by sweep() a timeout later)
    uint64_t timed_out = 0;  // by sweep(): idle, or the server's timeout
};

class ProxyFlows {
  public:
    // socket: NUMA socket of the table's memory. The EAL must be running.
    ProxyFlows(uint32_t capacity, uint64_t server_timeout_ns, uint64_t idle_timeout_ns,
               const HashSeed &seed, int socket);
    ~ProxyFlows();
    ProxyFlows(const ProxyFlows &) = delete;
    ProxyFlows &operator=(const ProxyFlows &) = delete;

    bool ok() const { return hash_ != nullptr; }
    // What a table of capacity connections takes of the EAL's memory, about (rte_hash's keys
    // and buckets; the connections themselves are on the heap).
    static uint64_t dpdk_bytes_for(uint64_t capacity) {
        return (capacity + capacity / 4 + 8) * 128;
    }
    uint32_t capacity() const { return capacity_; }
    uint32_t size() const { return size_; }
    uint32_t slots() const { return slots_; }  // positions sweep() goes round
    const ProxyFlowsStats &stats() const { return stats_; }

    ProxyFlow *find(const FlowKey &k);
    // False when k's connection is certainly absent (its hash range holds none): one byte.
    bool may_contain(const FlowKey &k) const {
        return size_ > 0 && present_[presence(hash(k))] != 0;
    }
    // The connections of n keys (n <= kFindBulkMax) in one rte_hash call, out[i] nullptr where
    // absent; each found connection's line is prefetched.
    static constexpr unsigned kFindBulkMax = 64;  // RTE_HASH_LOOKUP_BULK_MAX
    void find_bulk(const FlowKey *const *keys, unsigned n, ProxyFlow **out);
    // A new connection in state opening at now_ns; nullptr (counted in full) without room. A
    // key already present gives back its connection as it is (not counted as opened).
    ProxyFlow *open(const FlowKey &k, uint64_t now_ns);
    // Ends a connection (its held handles are the caller's to free first).
    void close(ProxyFlow *f);

    // Visits the next n slots round robin and hands each connection past its timeout at now_ns
    // (idle_timeout while open, server_timeout in every other state) to on_expired, which
    // frees what it holds and returns whether to keep it (having changed its state and
    // last_ns: an opening one becomes failed); one not kept ends.
    template <class F>
    void sweep(uint64_t now_ns, uint32_t n, F &&on_expired) {
        for (uint32_t i = 0; i < n && size_ > 0; ++i) {
            ProxyFlow &f = flows_[cursor_];
            cursor_ = cursor_ + 1 == slots_ ? 0 : cursor_ + 1;
            if (f.state == FlowState::free) continue;
            const uint64_t limit =
                f.state == FlowState::open ? idle_timeout_ns_ : server_timeout_ns_;
            if (now_ns - f.last_ns < limit) continue;
            const bool closed = f.state == FlowState::closing;  // a FIN each way: its end
            if (on_expired(f)) continue;
            remove(&f);
            ++(closed ? stats_.closed : stats_.timed_out);
        }
    }

  private:
    uint32_t hash(const FlowKey &k) const;
    void remove(ProxyFlow *f);
    // A count of open connections per 2^18 ranges of their hashes, so that the lookup of a
    // connection that is not there (every segment of the connections syn-proxy does not hold:
    // verified sources', older ones) mostly stops at one byte instead of rte_hash's buckets and
    // key compare. A count that reaches kPresenceStuck stays (no false negatives, ever).
    static constexpr unsigned kPresenceLog2 = 18;
    static constexpr uint8_t kPresenceStuck = 255;
    static uint32_t presence(uint32_t sig) { return sig >> (32 - kPresenceLog2); }
    std::unique_ptr<uint8_t[]> present_{new uint8_t[1u << kPresenceLog2]()};

    rte_hash *hash_ = nullptr;
    std::unique_ptr<ProxyFlow[]> flows_;
    uint32_t capacity_ = 0;
    uint32_t slots_ = 0;  // positions rte_hash can return
    uint32_t size_ = 0;
    uint32_t cursor_ = 0;
    HashSeed seed_;
    uint64_t server_timeout_ns_;
    uint64_t idle_timeout_ns_;
    ProxyFlowsStats stats_;
};

}  // namespace floodgate
