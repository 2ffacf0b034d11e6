// Adaptive limits (limit.adaptive): this core's view of each adaptive rule's learned rate, and
// its share of the sampling that moves it (dataplane/core/adaptive_limit.h,
// dataplane/core/response_samples.h).
#include "dataplane/pipeline/pipeline.h"

#include <algorithm>

namespace floodgate {

namespace {
// TCP payload bytes of a parsed segment whose header is in the captured bytes, else 0.
uint32_t tcp_payload(const PacketInfo &p, const uint8_t *frame, uint32_t captured) {
    if (p.l4_proto != kProtoTcp || !p.has_l4 || uint32_t{p.l4_offset} + 13 > captured) return 0;
    const uint32_t header = (frame[p.l4_offset + 12] >> 4) * 4u;
    return p.l4_len > header ? p.l4_len - header : 0;
}
}  // namespace

// The learned rate, as this core holds packets to it: read once a burst (a load per adaptive
// rule), the profile made again only when the rate moved. And a few sample slots swept.
void Pipeline::refresh_adaptive(uint64_t now_ns) {
    for (uint16_t i : rules_->adaptive_rules()) {
        const CompiledRule &r = rules_->rules()[i];
        RuleCoreState &core = mine(r);
        const uint64_t milli = r.state->adaptive.rate();
        if (milli == core.adapted_milli) continue;
        core.adapted_milli = milli;
        core.adapted.kind = LimitKind::gcra;
        core.adapted.gcra = gcra_profile(interval_of_milli(milli), r.burst_pkts);
        const uint64_t whole = core.adapted.allowance();
        for (unsigned k = 0; k < kTrustClasses; ++k)
            core.adapted_allowance[k] =
                whole - static_cast<uint64_t>(static_cast<unsigned __int128>(whole) *
                                              r.class_reserved_pct[k] / 100);
    }
    if (!ticked_ && samples_.active() > 0) sweep_samples(now_ns, 4);  // replay: no tick
}

// A SYN an adaptive rule admitted: its connection may be sampled.
void Pipeline::note_connection(const CompiledRule &r, const PacketInfo &info, uint64_t now_ns) {
    next_sample_ns_ = now_ns + kAdaptiveSampleGapNs;
    const uint64_t h = table_->hash(ResponseSamples::connection_key(info, false));
    if (!samples_.syn(info, h, r.key_id, r.adaptive_profile.target_ns, now_ns))
        ++counters_.adaptive_slots_busy;
    counters_.adaptive_unanswered += samples_.take_expired();
}

// A passed TCP segment from outside, not a SYN, while samples wait (stage two checks that).
void Pipeline::client_segment(const PacketInfo &info, const Frame &frame, uint64_t now_ns) {
    if (!info.has_l4) return;
    samples_.from_client(info, table_->hash(ResponseSamples::connection_key(info, false)),
                         tcp_payload(info, frame.bytes, frame.captured), now_ns);
}

void Pipeline::server_segment(const PacketInfo &info, const uint8_t *frame, uint32_t captured,
                              uint64_t now_ns) {
    if (info.l4_proto != kProtoTcp || !info.has_l4) return;
    ResponseSamples::Sample s;
    if (samples_.from_server(info, table_->hash(ResponseSamples::connection_key(info, true)),
                             tcp_payload(info, frame, captured), now_ns, &s))
        feed(s, now_ns);
}

void Pipeline::sweep_samples(uint64_t now_ns, unsigned slots) {
    ResponseSamples::Sample late[8];
    const unsigned n = samples_.sweep(now_ns, std::min(slots, 8u), late);
    for (unsigned i = 0; i < n; ++i) feed(late[i], now_ns);
    counters_.adaptive_unanswered += samples_.take_expired();
}

// A sample moves the rate of the rule that admitted its connection, if it is still loaded
// (a rule reloaded with its state keeps its key id).
void Pipeline::feed(const ResponseSamples::Sample &s, uint64_t now_ns) {
    for (uint16_t i : rules_->adaptive_rules()) {
        const CompiledRule &r = rules_->rules()[i];
        if (r.key_id != s.key_id) continue;
        r.state->adaptive.on_sample(r.adaptive_profile, s.response_ns, now_ns);
        ++counters_.adaptive_samples;
        return;
    }
}

}  // namespace floodgate
