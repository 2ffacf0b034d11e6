// Adaptive limits (limit.adaptive) end to end: two-way nanosecond captures built here (a client's
// SYN, the protected server's SYN-ACK from --inside, the client's ACK of the server's ISN, its
// request, the server's response), run through the real `floodgate replay --inside
// 198.18.1.0/24`, and STATS.json (and the PASS and DROP captures) compared with reference models
// written here, sharing no code with floodgate:
//   - AIMD, in integer millipackets a second, as the feature is specified: a sample over target
//     is late, and cuts the rate to rate * (100 - decrease) / 100 (not below min) when at least
//     `window` samples were taken since the last cut; a timely sample adds
//     max * increase / 100 / window (not above max);
//   - the rule's limit as a token bucket of `burst` tokens refilled one per T = 1e12 / rate ns,
//     credit kept in ns (gcra.h says GCRA makes the bucket's every decision).
// Every value asserted is exact; no assertion depends on wall-clock time.
//
// Every connection here is a whole one, in packet time (one frame per millisecond, so that with
// --workers 2, whose merge closes replay's window at each 1 ms of packet time, each frame is
// decided alone, in capture order):
//   t        client -> server  SYN           seq c
//   t+1ms    server -> client  SYN-ACK       seq s, ack c+1   (from --inside: passed, observed)
//   t+2ms    client -> server  ACK           ack s+1          (the handshake is complete)
//   t+3ms    client -> server  PSH|ACK, 100 bytes             (the request: its clock starts)
//   t+3ms+R  server -> client  PSH|ACK, 500 bytes             (the response: sample = R)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "tests/pcap_io.h"
#include "tests/pkt_builder.h"
#include "tests/scenario/harness.h"
#include "tests/scenario/traffic.h"

namespace floodgate::test {
namespace {

using nlohmann::json;

constexpr uint8_t kSyn = 0x02, kPsh = 0x08, kAckFlag = 0x10;
const std::string kServer = "198.18.1.1";
const std::string kInside = "198.18.1.0/24";
constexpr uint16_t kPort = 80;
constexpr uint64_t kMilli = 1000;  // millipackets a second in one packet a second

// ---------------------------------------------------------------------------------------------
// The reference models.

struct AimdParams {
    uint64_t start_milli = 0;  // limit.rate: where it starts
    uint64_t min_milli = 0;
    uint64_t max_milli = 0;
    uint64_t target_ns = 0;
    uint64_t window = 1;
    uint64_t decrease_pct = 20;
    uint64_t increase_pct = 5;
};

class AimdModel {
  public:
    explicit AimdModel(const AimdParams &p) : p_(p), rate_(p.start_milli) {}

    void sample(uint64_t response_ns) {
        ++samples_;
        ++since_;
        last_ns_ = response_ns;
        if (response_ns > p_.target_ns) {
            ++late_;
            if (since_ >= p_.window) {  // at most once a window of samples
                rate_ = std::max(p_.min_milli, rate_ * (100 - p_.decrease_pct) / 100);
                since_ = 0;
                ++decreases_;
            }
        } else {
            rate_ =
                std::min(p_.max_milli, rate_ + p_.max_milli * p_.increase_pct / 100 / p_.window);
        }
    }

    uint64_t rate() const { return rate_; }
    uint64_t samples() const { return samples_; }
    uint64_t late() const { return late_; }
    uint64_t decreases() const { return decreases_; }
    uint64_t last_ns() const { return last_ns_; }

  private:
    AimdParams p_;
    uint64_t rate_;
    uint64_t since_ = 0, samples_ = 0, late_ = 0, decreases_ = 0, last_ns_ = 0;
};

// A bucket of `burst` tokens, one more every T, credit in ns; full at its first packet.
class TokenBucket {
  public:
    TokenBucket(uint64_t rate_milli, uint64_t burst)
        : t_ns_(1'000'000'000'000ull / rate_milli), cap_ns_(burst * t_ns_) {}
    bool admit(uint64_t now_ns) {
        credit_ns_ = fresh_ ? cap_ns_ : std::min(cap_ns_, credit_ns_ + (now_ns - last_ns_));
        fresh_ = false;
        last_ns_ = now_ns;
        if (credit_ns_ < t_ns_) return false;
        credit_ns_ -= t_ns_;
        return true;
    }

  private:
    uint64_t t_ns_, cap_ns_;
    uint64_t credit_ns_ = 0, last_ns_ = 0;
    bool fresh_ = true;
};

// ---------------------------------------------------------------------------------------------
// Traffic.

struct Rec {
    uint64_t ts_ns;
    Frame frame;
};

class Trace {
  public:
    void add(uint64_t ts_ns, Frame f) { recs_.push_back({ts_ns, std::move(f)}); }

    // A whole connection from client:cport, its SYN at t; response_ns: when the server answers
    // the request (none: never). Returns the request's time.
    uint64_t connection(const std::string &client, uint16_t cport, uint64_t t,
                        std::optional<uint64_t> response_ns) {
        const uint32_t c = 1000u + cport, s = 7'000'000u + 3u * cport;
        add(t, tcp(client, kServer, cport, kPort, kSyn, c, 0, 0));
        add(t + ms(1), tcp(kServer, client, kPort, cport, kSyn | kAckFlag, s, c + 1, 0));
        add(t + ms(2), tcp(client, kServer, cport, kPort, kAckFlag, c + 1, s + 1, 0));
        const uint64_t request = t + ms(3);
        add(request, tcp(client, kServer, cport, kPort, kPsh | kAckFlag, c + 1, s + 1, 100));
        if (response_ns)
            add(request + *response_ns,
                tcp(kServer, client, kPort, cport, kPsh | kAckFlag, s + 1, c + 101, 500));
        return request;
    }

    // A frame no rule matches, from outside (UDP to the server's port 53), and one from the
    // inside (the server's UDP answer): each outside one between two inside ones is a burst of
    // its own.
    void outside_udp(uint64_t t, const std::string &src = "198.19.250.1") {
        PacketBuilder b;
        add(t, b.ipv4(src, kServer).udp(5353, 53).payload(20).build());
    }
    void inside_udp(uint64_t t, const std::string &dst = "198.19.250.1") {
        PacketBuilder b;
        add(t, b.ipv4(kServer, dst).udp(53, 5353).payload(20).build());
    }

    static Frame tcp(const std::string &src, const std::string &dst, uint16_t sport, uint16_t dport,
                     uint8_t flags, uint32_t seq, uint32_t ack, size_t payload) {
        PacketBuilder b;
        b.ipv4(src, dst).tcp(sport, dport, flags).tcp_seq(seq).tcp_ack(ack);
        if (payload > 0) b.payload(payload);
        return b.build();
    }

    // Sorted by time (ties keep the order they were added in), as a nanosecond pcap.
    void write(const std::string &file) {
        std::stable_sort(recs_.begin(), recs_.end(),
                         [](const Rec &a, const Rec &b) { return a.ts_ns < b.ts_ns; });
        PcapWriter w(file, PcapPrecision::nano);
        for (const Rec &r : recs_) w.write(r.ts_ns, r.frame);
        w.close();
    }
    uint64_t last_ns() const {
        uint64_t t = 0;
        for (const Rec &r : recs_) t = std::max(t, r.ts_ns);
        return t;
    }
    size_t size() const { return recs_.size(); }

  private:
    std::vector<Rec> recs_;
};

// An IPv4 frame's source and TCP flags (Ethernet, no tags, IHL 5: what PacketBuilder builds).
std::string source_of(const Frame &f) {
    return std::to_string(f[26]) + "." + std::to_string(f[27]) + "." + std::to_string(f[28]) + "." +
           std::to_string(f[29]);
}
bool is_tcp_syn_only(const Frame &f) {
    return f.size() >= 54 && f[23] == kProtoTcp && (f[47] & (kSyn | kAckFlag)) == kSyn;
}

std::string rules_yaml(const std::string &rate, unsigned burst, const std::string &adaptive) {
    return "rules:\n"
           "  - name: web\n"
           "    match: { proto: tcp, dst_port: 80, tcp_flags: \"syn !ack\" }\n"
           "    key: dst\n"
           "    reserve: { established: 0%, verified: 0%, known: 0% }\n"
           "    limit: { rate: " +
           rate + ", burst: " + std::to_string(burst) + ", adaptive: " + adaptive + " }\n";
}

// ---------------------------------------------------------------------------------------------
// The fixture.

class AdaptiveScenario : public Scenario {
  protected:
    // floodgate replay --inside 198.18.1.0/24 of `trace`; outputs pass<suffix>.pcap and so on.
    json replay_trace(Trace &trace, const std::string &rules, const std::string &suffix,
                      const std::vector<std::string> &extra = {}) {
        trace.write(path("trace" + suffix + ".pcap"));
        const std::string config = "rules" + suffix + ".yaml";
        write_text(config, rules);
        EXPECT_FALSE(floodgate_bin().empty()) << "set FLOODGATE_BIN to the floodgate binary";
        std::vector<std::string> argv = {floodgate_bin(), "replay",
                                         "--config",      path(config),
                                         "--in",          path("trace" + suffix + ".pcap"),
                                         "--pass",        path("pass" + suffix + ".pcap"),
                                         "--drop",        path("drop" + suffix + ".pcap"),
                                         "--stats",       path("stats" + suffix + ".json"),
                                         "--inside",      kInside,
                                         "--quiet"};
        argv.insert(argv.end(), extra.begin(), extra.end());
        const ProcessResult r = run_process(argv, dir_);
        EXPECT_EQ(r.exit_code, 0) << "floodgate replay failed; stderr:\n" << r.err;
        if (r.exit_code != 0) return json::object();
        return json::parse(read_file(path("stats" + suffix + ".json")));
    }

    static const json &rule(const json &s) { return s.at("rules").at(0); }
    static uint64_t limit_milli(const json &s) {
        return static_cast<uint64_t>(std::llround(rule(s).at("limit_per_s").get<double>() * 1000));
    }

    // The rule's learned limit and its adaptive{} against the model. age_ns: the last sample's
    // age the stats must show (the capture's last frame time less the last sample's).
    static void expect_model(const json &s, const AimdModel &m, uint64_t age_ns) {
        ASSERT_TRUE(s.contains("rules")) << s.dump();
        const json &a = rule(s).at("adaptive");
        EXPECT_EQ(limit_milli(s), m.rate()) << "limit_per_s " << rule(s).at("limit_per_s");
        EXPECT_EQ(u64(a, "samples"), m.samples());
        EXPECT_EQ(u64(a, "late"), m.late());
        EXPECT_EQ(u64(a, "decreases"), m.decreases());
        EXPECT_EQ(u64(s, "adaptive_samples"), m.samples());
        if (m.samples() > 0) {
            EXPECT_EQ(u64(a, "last_response_ns"), m.last_ns());
            EXPECT_EQ(u64(a, "last_sample_age_ns"), age_ns);
            EXPECT_EQ(a.at("stale").get<bool>(), age_ns > sec(5));
        } else {
            EXPECT_TRUE(a.at("stale").get<bool>()) << "no sample at all reads stale";
        }
    }
};

// 100/s to start, between 10/s and 400/s, target 50 ms, a window of 3 samples, cut by 20%,
// step 5% of max a window: 400,000 * 5 / 100 / 3 = 6,666 millipackets a timely sample.
const AimdParams kParams{.start_milli = 100 * kMilli,
                         .min_milli = 10 * kMilli,
                         .max_milli = 400 * kMilli,
                         .target_ns = ms(50),
                         .window = 3,
                         .decrease_pct = 20,
                         .increase_pct = 5};
const std::string kAdaptive =
    "{ min: 10/s, max: 400/s, target: 50ms, window: 3, decrease: 20%, increase: 5% }";
const std::string kRules = rules_yaml("100/s", 10, kAdaptive);

constexpr uint64_t kTimely = 20 * kNsPerMs;  // < target
constexpr uint64_t kSlow = 100 * kNsPerMs;   // 2x target
constexpr uint64_t kGap = 200 * kNsPerMs;    // between two connections' SYNs

std::string client(unsigned group, unsigned i) {
    return "198.19." + std::to_string(group * 10 + i / 250) + "." + std::to_string(i % 250 + 1);
}

// Sequential connections (each answered, or swept, before the next SYN), their SYNs kGap
// apart from t0, each answered after responses[i]. Returns the last frame's time.
uint64_t connections(Trace *trace, unsigned group, uint64_t t0,
                     const std::vector<uint64_t> &responses) {
    for (size_t i = 0; i < responses.size(); ++i)
        trace->connection(client(group, static_cast<unsigned>(i)), static_cast<uint16_t>(40000 + i),
                          t0 + i * kGap, responses[i]);
    return trace->last_ns();
}

// ---------------------------------------------------------------------------------------------
// 1. A healthy server: every response within target.

TEST_F(AdaptiveScenario, AHealthyServerRaisesTheLimitExactlyAsTheModelUpToMax) {
    // From 100/s by 6,666 a sample: 399,970 after 45 samples, max (400,000) at the 46th.
    const uint64_t t0 = kStartNs + sec(1);
    for (const size_t n : {1u, 3u, 20u, 45u, 46u, 60u}) {
        SCOPED_TRACE(std::to_string(n) + " connections");
        Trace trace;
        const std::vector<uint64_t> responses(n, kTimely);
        connections(&trace, 1, t0, responses);
        std::string suffix = "_";
        suffix += std::to_string(n);
        const json s = replay_trace(trace, kRules, suffix);
        ASSERT_FALSE(s.empty());
        AimdModel m(kParams);
        for (uint64_t r : responses) m.sample(r);
        expect_model(s, m, 0);  // the last frame is the last response
        EXPECT_EQ(u64(rule(s), "matched"), n) << "the SYNs alone match";
        EXPECT_EQ(u64(rule(s), "passed"), n);
        EXPECT_EQ(u64(rule(s), "refused"), 0u);
        EXPECT_EQ(u64(s, "adaptive_slots_busy"), 0u);
        EXPECT_EQ(u64(s, "dropped"), 0u);
        if (n == 45) {
            EXPECT_EQ(m.rate(), 399'970u);
        }
        if (n >= 46) {
            EXPECT_EQ(m.rate(), 400'000u);
        }
    }

    // No sample for more than 5 s of packet time: stale, the limit where it was. A frame 4 s
    // after the last sample: not yet.
    for (const uint64_t after : {sec(4), sec(6)}) {
        SCOPED_TRACE("a frame " + std::to_string(after / kNsPerSec) + " s after");
        Trace trace;
        const std::vector<uint64_t> responses(10, kTimely);
        const uint64_t last = connections(&trace, 1, t0, responses);
        trace.outside_udp(last + after);
        const json s = replay_trace(trace, kRules, "_stale" + std::to_string(after / kNsPerSec));
        ASSERT_FALSE(s.empty());
        AimdModel m(kParams);
        for (uint64_t r : responses) m.sample(r);
        expect_model(s, m, after);
        EXPECT_EQ(rule(s).at("adaptive").at("stale").get<bool>(), after > sec(5));
    }
}

// ---------------------------------------------------------------------------------------------
// 2. A slow server: every response after 2x target.

TEST_F(AdaptiveScenario, ASlowServerCutsTheLimitOnceAWindowDownToMin) {
    // Cuts at samples 3, 6, 9, ...: 100,000 -> 80,000 -> 64,000 -> 51,200 -> 40,960 -> 32,768
    // -> 26,214 -> 20,971 -> 16,776 -> 13,420 -> 10,736 -> 10,000 (min, at the 33rd sample),
    // and cuts still counted at min (36th, 39th).
    const uint64_t t0 = kStartNs + sec(1);
    const std::map<size_t, uint64_t> expected = {{2, 100'000}, {3, 80'000},  {5, 80'000},
                                                 {6, 64'000},  {18, 26'214}, {30, 10'736},
                                                 {33, 10'000}, {40, 10'000}};
    for (const auto &[n, rate] : expected) {
        SCOPED_TRACE(std::to_string(n) + " connections");
        Trace trace;
        const std::vector<uint64_t> responses(n, kSlow);
        connections(&trace, 2, t0, responses);
        std::string suffix = "_";
        suffix += std::to_string(n);
        const json s = replay_trace(trace, kRules, suffix);
        ASSERT_FALSE(s.empty());
        AimdModel m(kParams);
        for (uint64_t r : responses) m.sample(r);
        EXPECT_EQ(m.rate(), rate) << "the model against the hand-worked figure";
        EXPECT_EQ(m.decreases(), n / 3);
        EXPECT_EQ(m.late(), n);
        expect_model(s, m, 0);
        EXPECT_EQ(u64(rule(s), "passed"), n) << "every SYN, 200 ms apart, is within the limit";
        EXPECT_EQ(u64(rule(s), "refused"), 0u);
    }
}

// ---------------------------------------------------------------------------------------------
// 3. A server that never answers the requests: late samples from the sweep.
//
// A request outstanding past target is found by a sweep of 4 of the core's 1,024 sample slots
// at the start of each burst decided from outside (inside frames are observed, not swept;
// replay has no tick). The sweep's place moves only while some slot is busy, so a slot is
// visited within 1024 / 4 = 256 bursts: 256 bursts whose time is past the target find the
// request, whatever slot its connection hashed to. Here each outside frame is a burst of its
// own (an inside frame follows each), 256 of them from 1 ms past the target on, 0.2 ms apart.

constexpr unsigned kSweepBursts = 1024 / 4;

uint64_t unanswered(Trace *trace, unsigned i, uint64_t t) {
    const uint64_t request =
        trace->connection(client(3, i), static_cast<uint16_t>(41000 + i), t, std::nullopt);
    for (unsigned b = 0; b < kSweepBursts; ++b) {
        const uint64_t at = request + ms(51) + b * 200 * kNsPerUs;
        trace->outside_udp(at);
        trace->inside_udp(at + 100 * kNsPerUs);
    }
    return request;
}

TEST_F(AdaptiveScenario, AServerThatNeverAnswersReadsLateFromTheSweep) {
    // window 2, cut by half: 100/s -> 50 -> 25 -> 12.5 -> 10 (min) over 8 requests.
    const AimdParams p{.start_milli = 100 * kMilli,
                       .min_milli = 10 * kMilli,
                       .max_milli = 400 * kMilli,
                       .target_ns = ms(50),
                       .window = 2,
                       .decrease_pct = 50,
                       .increase_pct = 5};
    const std::string rules = rules_yaml(
        "100/s", 10,
        "{ min: 10/s, max: 400/s, target: 50ms, window: 2, decrease: 50%, increase: 5% }");
    const uint64_t t0 = kStartNs + sec(1);

    // With no frame after the request, nothing sweeps: no sample, the limit unchanged.
    {
        Trace trace;
        trace.connection(client(3, 0), 41000, t0, std::nullopt);
        const json s = replay_trace(trace, rules, "_none");
        ASSERT_FALSE(s.empty());
        EXPECT_EQ(u64(rule(s).at("adaptive"), "samples"), 0u);
        EXPECT_EQ(limit_milli(s), 100'000u);
        EXPECT_TRUE(rule(s).at("adaptive").at("stale").get<bool>());
    }

    Trace trace;
    std::vector<uint64_t> requests;
    for (unsigned i = 0; i < 8; ++i) requests.push_back(unanswered(&trace, i, t0 + i * kGap));
    const json s = replay_trace(trace, rules, "");
    ASSERT_FALSE(s.empty());
    const json &a = rule(s).at("adaptive");
    // The sweep's sample is the request's age when its slot was visited: past the target, by
    // at most the 256 bursts' span. Every one is late, whatever its exact age.
    AimdModel m(p);
    for (size_t i = 0; i < requests.size(); ++i) m.sample(ms(51));
    EXPECT_EQ(m.rate(), 10'000u);
    EXPECT_EQ(m.decreases(), 4u);
    EXPECT_EQ(limit_milli(s), m.rate());
    EXPECT_EQ(u64(a, "samples"), 8u) << "one late sample per unanswered request";
    EXPECT_EQ(u64(a, "late"), 8u);
    EXPECT_EQ(u64(a, "decreases"), 4u);
    EXPECT_EQ(u64(s, "adaptive_samples"), 8u);
    EXPECT_EQ(u64(s, "adaptive_slots_busy"), 0u);
    const uint64_t last_response = u64(a, "last_response_ns");
    EXPECT_GE(last_response, ms(51));
    EXPECT_LE(last_response, ms(51) + (kSweepBursts - 1) * 200 * kNsPerUs);
    // Found at a sweep: the sample was taken at the burst's time, request + its age.
    EXPECT_EQ(u64(a, "last_sample_age_ns"), trace.last_ns() - (requests.back() + last_response));
    EXPECT_FALSE(a.at("stale").get<bool>());
    EXPECT_EQ(u64(rule(s), "passed"), 8u);
}

// ---------------------------------------------------------------------------------------------
// 4. A spoofed SYN flood.

TEST_F(AdaptiveScenario, ASpoofedSynFloodTakesNoSampleAndLeavesTheLimitWhereItWas) {
    // 1000/s, burst 50; 4,000 SYNs from 4,000 sources, 0.5 ms apart (2,000/s for 2 s). The
    // server answers every one (from --inside); the spoofer, blind, sends an ACK with data whose
    // ack is not the server's ISN + 1.
    const std::string rules = rules_yaml(
        "1000/s", 50, "{ min: 100/s, max: 2000/s, target: 50ms, window: 3, decrease: 20% }");
    const uint64_t t0 = kStartNs + sec(1);
    const unsigned n = 4000;
    Trace trace;
    TokenBucket bucket(1000 * kMilli, 50);
    uint64_t admitted = 0;
    for (unsigned i = 0; i < n; ++i) {
        const std::string src =
            "10." + std::to_string(i / 250) + "." + std::to_string(i % 250 + 1) + ".7";
        const uint64_t t = t0 + i * 500 * kNsPerUs;
        const auto port = static_cast<uint16_t>(20000 + i % 30000);
        const uint32_t c = 5000u + i, s = 900'000u + 7u * i;
        trace.add(t, Trace::tcp(src, kServer, port, kPort, kSyn, c, 0, 0));
        trace.add(t + 100 * kNsPerUs,
                  Trace::tcp(kServer, src, kPort, port, kSyn | kAckFlag, s, c + 1, 0));
        trace.add(t + 200 * kNsPerUs,
                  Trace::tcp(src, kServer, port, kPort, kAckFlag | kPsh, c + 1, s + 12345, 64));
        admitted += bucket.admit(t);
    }
    // Well after the flood, more frames: sweeps run over the flood's slots.
    for (unsigned b = 0; b < 2 * kSweepBursts; ++b) {
        trace.outside_udp(t0 + sec(2) + ms(100) + b * kNsPerMs);
        trace.inside_udp(t0 + sec(2) + ms(100) + b * kNsPerMs + 100 * kNsPerUs);
    }
    const json s = replay_trace(trace, rules, "");
    ASSERT_FALSE(s.empty());
    const json &a = rule(s).at("adaptive");
    EXPECT_EQ(u64(rule(s), "matched"), n);
    EXPECT_EQ(u64(rule(s), "passed"), admitted) << "the rule's limit, as the token bucket";
    EXPECT_EQ(u64(rule(s), "refused"), n - admitted);
    EXPECT_EQ(u64(a, "samples"), 0u);
    EXPECT_EQ(u64(a, "late"), 0u);
    EXPECT_EQ(u64(a, "decreases"), 0u);
    EXPECT_EQ(u64(s, "adaptive_samples"), 0u);
    EXPECT_EQ(limit_milli(s), 1000 * kMilli) << "unchanged";
    EXPECT_TRUE(a.at("stale").get<bool>());
    // More admitted SYNs than slots within the 3 s a slot stays busy (none completes, none is
    // released): at least admitted - 1024 found their slot busy.
    ASSERT_GT(admitted, 1024u);
    EXPECT_GE(u64(s, "adaptive_slots_busy"), admitted - 1024);
    EXPECT_GT(u64(s, "adaptive_slots_busy"), 0u);
}

// ---------------------------------------------------------------------------------------------
// 5. The learned limit is enforced.

TEST_F(AdaptiveScenario, TheLearnedLimitIsWhatTheRuleAdmits) {
    // 40 slow connections: the limit falls to min, 10/s (T = 100 ms; burst 10: tau 1 s). 2 s
    // later (the key's bucket full again), 40 SYNs from new clients 10 ms apart (100/s): the
    // bucket of 10 at 10/s admits its 10 and one every 100 ms. At the configured 100/s the same
    // SYNs would all pass.
    const uint64_t t0 = kStartNs + sec(1);
    Trace trace;
    const std::vector<uint64_t> responses(40, kSlow);
    const uint64_t last = connections(&trace, 5, t0, responses);
    AimdModel m(kParams);
    for (uint64_t r : responses) m.sample(r);
    ASSERT_EQ(m.rate(), kParams.min_milli);

    const uint64_t burst_at = last + sec(2);
    TokenBucket learned(m.rate(), 10), configured(kParams.start_milli, 10);
    std::set<std::string> should_pass;
    uint64_t passed = 0, at_configured = 0;
    std::vector<std::string> sources;
    for (unsigned i = 0; i < 40; ++i) {
        const std::string src = "198.19.60." + std::to_string(i + 1);
        const uint64_t t = burst_at + i * 10 * kNsPerMs;
        trace.add(t,
                  Trace::tcp(src, kServer, static_cast<uint16_t>(30000 + i), kPort, kSyn, i, 0, 0));
        sources.push_back(src);
        if (learned.admit(t)) {
            should_pass.insert(src);
            ++passed;
        }
        at_configured += configured.admit(t);
    }
    // The first 11 (the 11th, 100 ms in, finds the token refilled meanwhile), then credit 0,
    // refilled 10 ms a SYN: the 21st and 31st pass too.
    EXPECT_EQ(passed, 13u);
    EXPECT_EQ(at_configured, 40u);

    const json s = replay_trace(trace, kRules, "");
    ASSERT_FALSE(s.empty());
    expect_model(s, m, trace.last_ns() - last);
    EXPECT_EQ(u64(rule(s), "passed"), 40 + passed);
    EXPECT_EQ(u64(rule(s), "refused"), 40 - passed);

    // Which ones: the burst's SYNs in PASS are exactly the model's.
    std::set<std::string> in_pass, in_drop;
    for (const PcapRecord &r : read_pcap(path("pass.pcap")).records)
        if (is_tcp_syn_only(r.bytes) && source_of(r.bytes).rfind("198.19.60.", 0) == 0)
            in_pass.insert(source_of(r.bytes));
    for (const PcapRecord &r : read_pcap(path("drop.pcap")).records) {
        ASSERT_TRUE(is_tcp_syn_only(r.bytes)) << "only SYNs are refused";
        in_drop.insert(source_of(r.bytes));
    }
    EXPECT_EQ(in_pass, should_pass);
    EXPECT_EQ(in_pass.size() + in_drop.size(), sources.size());
    for (const std::string &src : in_drop) EXPECT_EQ(should_pass.count(src), 0u) << src;
}

// ---------------------------------------------------------------------------------------------
// 6. Two workers: each client's connection on its own core, the dst key shared by the merge.

TEST_F(AdaptiveScenario, TwoWorkersLearnFromSamplesOnBothCoresInCaptureOrder) {
    // 80 connections from 80 clients, timely or slow at random (fixed seed): the order of the
    // samples matters (a cut depends on the samples since the last one). Every frame is at
    // least 1 ms from the one before, and replay with --workers 2 closes its window at each
    // 1 ms merge: each frame is decided alone, in capture order, on its source's core (the
    // server's frames on their destination's), so the samples reach the shared rate word in
    // capture order and the model's order is exact. Steering is by the whole client address
    // (/32, the default for a rule keyed by dst): 80 clients land on both cores.
    std::mt19937_64 rng(2026);
    std::vector<uint64_t> responses;
    for (int i = 0; i < 80; ++i) responses.push_back(rng() % 100 < 40 ? kSlow : kTimely);
    const uint64_t t0 = kStartNs + sec(1);
    AimdModel m(kParams);
    for (uint64_t r : responses) m.sample(r);
    ASSERT_GT(m.late(), 10u);
    ASSERT_LT(m.late(), 70u);

    // In another order, the same samples end elsewhere: the order is what is being checked.
    std::vector<uint64_t> sorted = responses;
    std::sort(sorted.begin(), sorted.end());
    AimdModel other(kParams);
    for (uint64_t r : sorted) other.sample(r);
    EXPECT_NE(other.rate(), m.rate());

    for (const char *workers : {"1", "2"}) {
        SCOPED_TRACE(std::string("--workers ") + workers);
        Trace trace;
        connections(&trace, 6, t0, responses);
        const json s =
            replay_trace(trace, kRules, std::string("_w") + workers, {"--workers", workers});
        ASSERT_FALSE(s.empty());
        expect_model(s, m, 0);
        EXPECT_EQ(u64(rule(s).at("adaptive"), "samples"), responses.size())
            << "one sample per connection, whichever core took it";
        EXPECT_EQ(u64(rule(s), "passed"), responses.size());
        EXPECT_EQ(u64(rule(s), "refused"), 0u);
        EXPECT_EQ(u64(s, "adaptive_slots_busy"), 0u);
    }

    // With a merge every second instead, replay's window holds up to 64 frames (32 a core) and
    // decides them core by core: core 0's samples of a window reach the rate word before core
    // 1's, whatever their capture order. Which client is on which core is the steering hash's
    // choice, so the order is not the capture's and the final limit is not the model's (with
    // this seed it reads 70.801/s against the model's 71.518/s: the samples were reordered,
    // which also shows that both cores took some). What holds in any order: every sample is
    // taken, the late ones are the same, at most one cut a window of samples, between min and
    // max.
    {
        Trace trace;
        connections(&trace, 6, t0, responses);
        const json s = replay_trace(trace, kRules, "_coarse",
                                    {"--workers", "2", "--merge-interval-us", "1000000"});
        ASSERT_FALSE(s.empty());
        const json &a = rule(s).at("adaptive");
        EXPECT_EQ(u64(a, "samples"), m.samples());
        EXPECT_EQ(u64(a, "late"), m.late());
        EXPECT_LE(u64(a, "decreases"), m.samples() / kParams.window);
        EXPECT_GE(u64(a, "decreases"), 1u);
        EXPECT_GE(limit_milli(s), kParams.min_milli);
        EXPECT_LE(limit_milli(s), kParams.max_milli);
        EXPECT_EQ(u64(rule(s), "passed"), responses.size());
    }
}

}  // namespace
}  // namespace floodgate::test
