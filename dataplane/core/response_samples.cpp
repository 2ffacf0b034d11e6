#include "dataplane/core/response_samples.h"

namespace floodgate {

namespace {
// A RST or a FIN ends what the slot waited for: freed, with no sample.
bool ends_connection(const PacketInfo &p) {
    return (p.tcp_flags & (kTcpRst | kTcpFin)) != 0;
}
}  // namespace

ResponseSamples::Slot *ResponseSamples::find(const PacketInfo &p, uint64_t hash, bool from_server) {
    Slot &s = slots_[hash & (kSlots - 1)];
    if (s.state == State::free || s.family != p.family) return nullptr;
    const uint8_t *client = from_server ? p.dst : p.src;
    const uint8_t *server = from_server ? p.src : p.dst;
    const uint16_t cport = from_server ? p.dst_port : p.src_port;
    const uint16_t sport = from_server ? p.src_port : p.dst_port;
    if (s.cport != cport || s.sport != sport || std::memcmp(s.client, client, 16) != 0 ||
        std::memcmp(s.server, server, 16) != 0)
        return nullptr;
    return &s;
}

bool ResponseSamples::syn(const PacketInfo &p, uint64_t hash, uint32_t key_id, uint64_t target_ns,
                          uint64_t now_ns) {
    if (find(p, hash, false) != nullptr) return true;  // a retransmission: the first SYN counts
    Slot &s = slots_[hash & (kSlots - 1)];
    if (s.state != State::free) {
        if (now_ns - s.since_ns < kIdleNs) return false;
        release(s);
        ++expired_;
    }
    std::memcpy(s.client, p.src, 16);
    std::memcpy(s.server, p.dst, 16);
    s.cport = p.src_port;
    s.sport = p.dst_port;
    s.family = p.family;
    s.state = State::syn_sent;
    s.key_id = key_id;
    s.server_isn = 0;
    s.target_ns = target_ns;
    s.since_ns = now_ns;
    ++active_;
    return true;
}

void ResponseSamples::from_client(const PacketInfo &p, uint64_t hash, uint32_t payload,
                                  uint64_t now_ns) {
    Slot *s = find(p, hash, false);
    if (s == nullptr) return;
    if (ends_connection(p)) {
        release(*s);
        return;
    }
    // Only the client that saw the server's SYN-ACK can acknowledge its ISN.
    if (s->state == State::syn_acked && (p.tcp_flags & kTcpAck) != 0 &&
        p.tcp_ack == s->server_isn + 1) {
        s->state = State::established;
        s->since_ns = now_ns;
    }
    if (s->state == State::established && payload > 0) {
        s->state = State::requested;
        s->since_ns = now_ns;
    }
}

bool ResponseSamples::from_server(const PacketInfo &p, uint64_t hash, uint32_t payload,
                                  uint64_t now_ns, Sample *out) {
    Slot *s = find(p, hash, true);
    if (s == nullptr) return false;
    if (ends_connection(p)) {
        release(*s);
        return false;
    }
    const bool syn_ack = (p.tcp_flags & (kTcpSyn | kTcpAck)) == (kTcpSyn | kTcpAck);
    if (s->state == State::syn_sent && syn_ack) {
        s->state = State::syn_acked;
        s->server_isn = p.tcp_seq;
        return false;
    }
    // A request's answer; or, before any request, a server that speaks first (SMTP's or SSH's
    // banner): the time from the handshake's end.
    if ((s->state != State::requested && s->state != State::established) || payload == 0)
        return false;
    *out = Sample{s->key_id, now_ns - s->since_ns};
    release(*s);
    return true;
}

unsigned ResponseSamples::sweep(uint64_t now_ns, unsigned slots, Sample *out) {
    unsigned n = 0;
    for (unsigned k = 0; k < slots && active_ > 0; ++k) {
        Slot &s = slots_[sweep_at_];
        sweep_at_ = (sweep_at_ + 1) & (kSlots - 1);
        if (s.state == State::free || now_ns < s.since_ns) continue;
        const uint64_t age = now_ns - s.since_ns;
        if (s.state == State::requested && age > s.target_ns) {
            out[n++] = Sample{s.key_id, age};
            release(s);
        } else if (age >= kIdleNs) {
            release(s);
            ++expired_;
        }
    }
    return n;
}

}  // namespace floodgate
