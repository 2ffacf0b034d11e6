// The protected server's response time, sampled inline for adaptive limits (adaptive_limit.h):
// for a connection an adaptive rule admitted, the time from the client's first request segment
// to the server's first segment with data (a server that speaks first, SMTP's or SSH's banner:
// from the handshake's end). perf/results/adaptive-signals.md measured why this
// signal and not the handshake's: a starved server's kernel still completes handshakes in
// 0.02 ms until its accept queue overflows, seconds later, while its first responses slow at
// once (3.6 ms to 495 ms within the first half second, in every run).
//
// Spoofed traffic cannot move it: a connection is sampled only once its client acknowledged the
// server's SYN-ACK (ack = the server's ISN + 1), which a spoofer never sees. A spoofed flood
// can only keep the slots busy, so that fewer samples are taken (counted): the limit then stays
// where it is, and reads stale. A request outstanding past its rule's target is a late sample
// at once, so a server that answers nothing still reads as slow.
//
// One core's table (its Pipeline's): kSlots direct-mapped slots of one cache line, by a keyed
// hash of the connection; a busy slot is not taken over before it is idle for kIdleNs.
#pragma once

#include <cstdint>
#include <cstring>

#include "dataplane/core/limit_table.h"
#include "dataplane/core/parse.h"

namespace floodgate {

class ResponseSamples {
  public:
    static constexpr uint32_t kSlots = 1024;
    static constexpr uint64_t kIdleNs = 3'000'000'000ull;  // a slot no packet moved: free

    struct Sample {
        uint32_t key_id;  // of the rule that admitted the connection (RuleState::key_id)
        uint64_t response_ns;
    };

    // A SYN the rule admitted, client to server: a sample starts if the slot is free (a
    // retransmitted SYN of the connection keeps it). False when the slot was busy.
    bool syn(const PacketInfo &p, uint64_t hash, uint32_t key_id, uint64_t target_ns,
             uint64_t now_ns);
    // A segment from the client (outside to inside) that is not a SYN, with payload bytes of
    // data: its ACK of the server's SYN-ACK completes the handshake; its first data starts the
    // request's clock. Call only while active() > 0.
    void from_client(const PacketInfo &p, uint64_t hash, uint32_t payload, uint64_t now_ns);
    // A segment from the server (inside to outside): its SYN-ACK, or its first data, which
    // ends the sample (*out; true). Call only while active() > 0.
    bool from_server(const PacketInfo &p, uint64_t hash, uint32_t payload, uint64_t now_ns,
                     Sample *out);
    // Looks at the next `slots` slots: a request outstanding past its target ends as a late
    // sample; a slot idle for kIdleNs is freed. Returns the samples written to out (<= slots).
    unsigned sweep(uint64_t now_ns, unsigned slots, Sample *out);

    uint32_t active() const { return active_; }
    // Slots let go after kIdleNs without the connection's next step, since the last call: its
    // reply never came by this core (the server silent, the inside port down, or replies
    // reaching another worker).
    uint64_t take_expired() {
        const uint64_t n = expired_;
        expired_ = 0;
        return n;
    }

    // The connection's key for both directions (the server's segments: from_server), for the
    // table's keyed hash: both addresses and ports, so that no sender picks its slot.
    static LimitKey connection_key(const PacketInfo &p, bool from_server) {
        const uint8_t *client = from_server ? p.dst : p.src;
        const uint8_t *server = from_server ? p.src : p.dst;
        const uint16_t cport = from_server ? p.dst_port : p.src_port;
        const uint16_t sport = from_server ? p.src_port : p.dst_port;
        uint64_t c[2], s[2];
        std::memcpy(c, client, 16);
        std::memcpy(s, server, 16);
        return LimitKey{c[0] ^ (s[1] * 0x9e3779b97f4a7c15ull),
                        c[1] ^ (s[0] * 0xc2b2ae3d27d4eb4full), uint32_t{cport} << 16 | sport};
    }

  private:
    enum class State : uint8_t { free, syn_sent, syn_acked, established, requested };
    struct alignas(64) Slot {
        uint8_t client[16];
        uint8_t server[16];
        uint16_t cport;
        uint16_t sport;
        uint8_t family;
        State state;
        uint32_t key_id;
        uint32_t server_isn;
        uint64_t target_ns;
        uint64_t since_ns;  // the SYN, then the handshake's end, then the request
    };
    static_assert(sizeof(Slot) == 64);

    Slot *find(const PacketInfo &p, uint64_t hash, bool from_server);
    void release(Slot &s) {
        s.state = State::free;
        --active_;
    }

    Slot slots_[kSlots] = {};
    uint32_t active_ = 0;
    uint32_t sweep_at_ = 0;
    uint64_t expired_ = 0;
};

}  // namespace floodgate
