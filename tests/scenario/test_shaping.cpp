// Shaping (action: shape) end to end: nanosecond captures through the real `floodgate replay`,
// its PASS and DROP captures and STATS.json read back, and every frame's fate and departure time
// compared with a reference model written here. The model shares no code with floodgate (nor
// with the harness's reference model, which knows no shaping): per key, a bucket of `burst`
// whole tokens, one more every T on its own refill clock, in front of a FIFO queue. A packet
// leaves at the first instant at or after its arrival, and at or after its key's previous
// departure, at which a whole token is there; it is dropped when its key's queue is full (N
// packets still waiting at its arrival, or a wait longer than the delay bound) or when the
// core's held share is spent.
//
// Each frame carries its sequence number in its UDP payload, so that every frame read back is
// known whatever order it comes in.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <filesystem>
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

// ---------------------------------------------------------------------------------------------
// Traffic.

struct Arrival {
    uint64_t ts_ns = 0;
    std::string src;
    std::string dst = "198.18.255.1";
    uint8_t proto = kProtoUdp;
    uint32_t seq = 0;  // its index in the capture
    Frame frame;
};

Frame frame_for(const Arrival &a) {
    std::vector<uint8_t> payload = {'s', 'h', 'p', ':'};
    for (int shift = 24; shift >= 0; shift -= 8)
        payload.push_back(static_cast<uint8_t>(a.seq >> shift));
    for (uint8_t i = 0; i < 10; ++i) payload.push_back(i);
    PacketBuilder b;
    b.ipv4(a.src, a.dst);
    if (a.proto == kProtoTcp)
        b.tcp(40000, 443, 0x10);  // ACK
    else
        b.udp(40000, 25);
    return b.payload(payload).build();
}

// A capture under construction: arrivals added in any order, then sorted by time (ties keep
// the order they were added in) and numbered.
class Capture {
  public:
    void add(uint64_t ts_ns, const std::string &src, const std::string &dst = "198.18.255.1",
             uint8_t proto = kProtoUdp) {
        Arrival a;
        a.ts_ns = ts_ns;
        a.src = src;
        a.dst = dst;
        a.proto = proto;
        list_.push_back(a);
    }
    std::vector<Arrival> done() {
        std::stable_sort(list_.begin(), list_.end(),
                         [](const Arrival &x, const Arrival &y) { return x.ts_ns < y.ts_ns; });
        for (size_t i = 0; i < list_.size(); ++i) {
            list_[i].seq = static_cast<uint32_t>(i);
            list_[i].frame = frame_for(list_[i]);
        }
        return list_;
    }

  private:
    std::vector<Arrival> list_;
};

// The sequence number after the payload's "shp:" marker.
std::optional<uint32_t> seq_in(const Frame &f) {
    for (size_t i = 0; i + 8 <= f.size(); ++i)
        if (f[i] == 's' && f[i + 1] == 'h' && f[i + 2] == 'p' && f[i + 3] == ':')
            return (uint32_t{f[i + 4]} << 24) | (uint32_t{f[i + 5]} << 16) |
                   (uint32_t{f[i + 6]} << 8) | uint32_t{f[i + 7]};
    return std::nullopt;
}

// ---------------------------------------------------------------------------------------------
// The reference model.

struct ShapeParams {
    uint64_t interval_ns = 0;                // T
    uint64_t burst = 1;                      // tokens the bucket holds
    uint64_t queue_packets = 0;              // N packets may wait per key (0: bounded by delay)
    uint64_t queue_delay_ns = 0;             // ... or none may wait longer than this
    uint64_t pool = UINT64_MAX;              // packets held at once, all keys (--shape-hold)
    bool key_by_dst = false;                 // key: { dst } (else by source)
    std::set<uint8_t> protos = {kProtoUdp};  // what the rule matches
};

enum class Fate { now, delayed, queue_full, pool_full, unmatched };

struct ModelResult {
    std::vector<Fate> fate;           // by seq
    std::vector<uint64_t> departure;  // by seq: when it leaves (passed or delayed)
    uint64_t delayed = 0;
    uint64_t queue_full = 0;
    uint64_t pool_full = 0;
    uint64_t matched = 0;
    uint64_t longest_wait_ns = 0;
};

class TokenQueueModel {
  public:
    explicit TokenQueueModel(const ShapeParams &p) : p_(p) {}

    ModelResult run(const std::vector<Arrival> &arrivals) {
        ModelResult r;
        r.fate.resize(arrivals.size());
        r.departure.assign(arrivals.size(), 0);
        std::multiset<uint64_t> all_waiting;  // departures still ahead, every key
        for (const Arrival &a : arrivals) {
            if (p_.protos.count(a.proto) == 0) {
                r.fate[a.seq] = Fate::unmatched;
                r.departure[a.seq] = a.ts_ns;
                continue;
            }
            ++r.matched;
            Key &k = keys_[p_.key_by_dst ? a.dst : a.src];
            while (!k.waiting.empty() && k.waiting.front() <= a.ts_ns) k.waiting.pop_front();
            while (!all_waiting.empty() && *all_waiting.begin() <= a.ts_ns)
                all_waiting.erase(all_waiting.begin());

            // When would it leave? Work on a copy; commit only if it is kept.
            Key next = k;
            uint64_t t = std::max(a.ts_ns, k.last_departure_ns);
            refill(&next, t);
            if (next.tokens == 0) {
                t = next.next_token_ns;
                refill(&next, t);
            }
            if (t > a.ts_ns) {
                const bool over = p_.queue_packets != 0 ? k.waiting.size() >= p_.queue_packets
                                                        : t - a.ts_ns > p_.queue_delay_ns;
                if (over) {
                    r.fate[a.seq] = Fate::queue_full;
                    ++r.queue_full;
                    continue;
                }
                if (all_waiting.size() >= p_.pool) {
                    r.fate[a.seq] = Fate::pool_full;
                    ++r.pool_full;
                    continue;
                }
            }
            // Take the token at t.
            if (next.tokens == p_.burst) next.next_token_ns = t + p_.interval_ns;
            --next.tokens;
            next.last_departure_ns = t;
            if (t > a.ts_ns) {
                next.waiting.push_back(t);
                all_waiting.insert(t);
                r.fate[a.seq] = Fate::delayed;
                ++r.delayed;
                r.longest_wait_ns = std::max(r.longest_wait_ns, t - a.ts_ns);
            } else {
                r.fate[a.seq] = Fate::now;
            }
            r.departure[a.seq] = t;
            k = next;
        }
        return r;
    }

  private:
    struct Key {
        uint64_t tokens = 0;
        bool fresh = true;
        uint64_t next_token_ns = 0;  // when the next token comes, while tokens < burst
        uint64_t last_departure_ns = 0;
        std::deque<uint64_t> waiting;  // departures of its packets still waiting
    };

    void refill(Key *k, uint64_t t) const {
        if (k->fresh) {  // a key never seen: its bucket is full
            k->fresh = false;
            k->tokens = p_.burst;
            return;
        }
        while (k->tokens < p_.burst && k->next_token_ns <= t) {
            ++k->tokens;
            k->next_token_ns += p_.interval_ns;
        }
    }

    ShapeParams p_;
    std::map<std::string, Key> keys_;
};

// ---------------------------------------------------------------------------------------------
// Reading floodgate's output.

struct Outcome {
    std::vector<std::optional<uint64_t>> passed_at;         // by seq
    std::vector<bool> dropped;                              // by seq
    std::vector<std::pair<uint32_t, uint64_t>> pass_order;  // (seq, ts) in PASS order
    uint64_t unknown = 0;     // frames read back that are in no arrival
    uint64_t duplicates = 0;  // frames read back twice
    uint64_t backwards = 0;   // PASS timestamps lower than the one before
};

class ShapingScenario : public Scenario {
  protected:
    void write_capture(const std::vector<Arrival> &arrivals) {
        PcapWriter w(path("trace.pcap"), PcapPrecision::nano);
        for (const Arrival &a : arrivals) w.write(a.ts_ns, a.frame);
        w.close();
    }

    // floodgate replay of trace.pcap under `rules`; outputs pass<suffix>.pcap, drop<suffix>.pcap
    // and stats<suffix>.json, which it returns.
    json replay_with(const std::string &rules, const std::string &suffix,
                     const std::vector<std::string> &extra = {}) {
        const std::string config = "rules" + suffix + ".yaml";
        write_text(config, rules);
        EXPECT_FALSE(floodgate_bin().empty()) << "set FLOODGATE_BIN to the floodgate binary";
        std::vector<std::string> argv = {floodgate_bin(), "replay",
                                         "--config",      path(config),
                                         "--in",          path("trace.pcap"),
                                         "--pass",        path("pass" + suffix + ".pcap"),
                                         "--drop",        path("drop" + suffix + ".pcap"),
                                         "--stats",       path("stats" + suffix + ".json"),
                                         "--quiet"};
        argv.insert(argv.end(), extra.begin(), extra.end());
        const ProcessResult r = run_process(argv, dir_);
        EXPECT_EQ(r.exit_code, 0) << "floodgate replay failed; stderr:\n" << r.err;
        if (r.exit_code != 0) return json::object();
        return json::parse(read_file(path("stats" + suffix + ".json")));
    }

    Outcome outcome(const std::vector<Arrival> &arrivals, const std::string &suffix) {
        Outcome o;
        o.passed_at.resize(arrivals.size());
        o.dropped.assign(arrivals.size(), false);
        std::vector<bool> seen(arrivals.size(), false);
        // The sequence number from the payload, then the whole frame compared with what was
        // sent under that number.
        const auto find = [&](const PcapRecord &rec) -> std::optional<uint32_t> {
            const std::optional<uint32_t> seq = seq_in(rec.bytes);
            if (!seq || *seq >= arrivals.size() || rec.bytes != arrivals[*seq].frame) {
                ++o.unknown;
                return std::nullopt;
            }
            if (seen[*seq]) ++o.duplicates;
            seen[*seq] = true;
            return seq;
        };
        const PcapFile pass = read_pcap(path("pass" + suffix + ".pcap"));
        EXPECT_EQ(pass.precision, PcapPrecision::nano) << "PASS keeps the capture's precision";
        uint64_t previous = 0;
        for (const PcapRecord &rec : pass.records) {
            if (rec.ts_ns < previous) ++o.backwards;
            previous = std::max(previous, rec.ts_ns);
            if (const std::optional<uint32_t> s = find(rec)) {
                o.passed_at[*s] = rec.ts_ns;
                o.pass_order.emplace_back(*s, rec.ts_ns);
            }
        }
        for (const PcapRecord &rec : read_pcap(path("drop" + suffix + ".pcap")).records)
            if (const std::optional<uint32_t> s = find(rec)) o.dropped[*s] = true;
        EXPECT_EQ(o.unknown, 0u) << "frames in PASS or DROP that were never sent";
        EXPECT_EQ(o.duplicates, 0u) << "frames written twice";
        EXPECT_EQ(o.backwards, 0u) << "PASS timestamps go backwards";
        for (size_t s = 0; s < arrivals.size(); ++s)
            EXPECT_TRUE(seen[s]) << "frame " << s << " is in neither PASS nor DROP";
        return o;
    }

    // Every frame where the model puts it, at the model's time; the key's frames in PASS in
    // their arrival order.
    void expect_model(const std::vector<Arrival> &arrivals, const ModelResult &m, const Outcome &o,
                      const ShapeParams &p) {
        uint64_t wrong = 0;
        for (const Arrival &a : arrivals) {
            const Fate f = m.fate[a.seq];
            const bool passes = f == Fate::now || f == Fate::delayed || f == Fate::unmatched;
            std::string problem;
            if (passes && !o.passed_at[a.seq])
                problem = "should pass at " + std::to_string(m.departure[a.seq]) + ", dropped";
            else if (passes && *o.passed_at[a.seq] != m.departure[a.seq])
                problem = "should leave at " + std::to_string(m.departure[a.seq]) + ", left at " +
                          std::to_string(*o.passed_at[a.seq]);
            else if (!passes && !o.dropped[a.seq])
                problem = "should be dropped, passed at " +
                          std::to_string(o.passed_at[a.seq].value_or(0));
            if (!problem.empty() && ++wrong <= 8)
                ADD_FAILURE() << "frame " << a.seq << " (" << a.src << " -> " << a.dst
                              << ", arrived " << a.ts_ns << "): " << problem;
        }
        EXPECT_EQ(wrong, 0u) << "frames where the model does not put them (first 8 above)";

        // Order kept per key.
        std::map<std::string, uint32_t> last_seq;
        for (const auto &[seq, ts] : o.pass_order) {
            const Arrival &a = arrivals[seq];
            if (p.protos.count(a.proto) == 0) continue;
            const std::string key = p.key_by_dst ? a.dst : a.src;
            const auto it = last_seq.find(key);
            if (it != last_seq.end()) {
                EXPECT_LT(it->second, seq) << "key " << key << " out of order in PASS";
            }
            last_seq[key] = seq;
        }
    }

    // Departures exactly T apart per key while its queue is not empty: a delayed frame leaves
    // one T after its key's previous departure if that one left after it arrived. Returns how
    // many such back-to-back departures there were.
    static uint64_t expect_spacing(const std::vector<Arrival> &arrivals, const Outcome &o,
                                   const ShapeParams &p) {
        std::map<std::string, uint64_t> last;
        uint64_t back_to_back = 0;
        for (const Arrival &a : arrivals) {
            if (p.protos.count(a.proto) == 0 || !o.passed_at[a.seq]) continue;
            const std::string key = p.key_by_dst ? a.dst : a.src;
            const uint64_t at = *o.passed_at[a.seq];
            const auto it = last.find(key);
            if (it != last.end() && it->second >= a.ts_ns && at > a.ts_ns) {
                EXPECT_EQ(at - it->second, p.interval_ns)
                    << "frame " << a.seq << " of key " << key << " queued behind the previous";
                ++back_to_back;
            }
            last[key] = at;
        }
        return back_to_back;
    }

    // The most packets any key had waiting at any of its departures: just before it, counting
    // the one leaving (arrived before then, leaving then or later).
    static uint64_t deepest_queue(const std::vector<Arrival> &arrivals, const Outcome &o,
                                  const ShapeParams &p) {
        std::map<std::string, std::vector<std::pair<uint64_t, uint64_t>>> by_key;  // (in, out)
        for (const Arrival &a : arrivals)
            if (p.protos.count(a.proto) != 0 && o.passed_at[a.seq])
                by_key[p.key_by_dst ? a.dst : a.src].emplace_back(a.ts_ns, *o.passed_at[a.seq]);
        uint64_t deepest = 0;
        for (const auto &[key, frames] : by_key)
            for (const auto &[in_d, d] : frames) {
                uint64_t waiting = 0;
                for (const auto &[in, out] : frames)
                    if (in < d && out >= d) ++waiting;
                deepest = std::max(deepest, waiting);
            }
        return deepest;
    }

    // STATS.json against the model, for one shape rule (the first) and the totals.
    static void expect_stats(const json &s, const ModelResult &m, uint64_t packets) {
        ASSERT_TRUE(s.contains("rules") && s.at("rules").is_array() && !s.at("rules").empty())
            << s.dump();
        const json &r = s.at("rules")[0];
        const uint64_t drops = m.queue_full + m.pool_full;
        EXPECT_EQ(u64(r, "matched"), m.matched);
        EXPECT_EQ(u64(r, "passed"), m.matched - drops) << "a delayed packet counts as passed";
        EXPECT_EQ(u64(r, "refused"), drops);
        EXPECT_EQ(u64(r, "delayed"), m.delayed);
        EXPECT_EQ(u64(r, "shaped"), m.delayed);
        EXPECT_EQ(u64(r, "shape_flushed"), 0u);
        EXPECT_EQ(u64(r, "held"), 0u);
        EXPECT_EQ(u64(r, "shape_dropped"), drops);
        EXPECT_EQ(u64(r, "longest_wait_ns"), m.longest_wait_ns);
        EXPECT_EQ(u64(r, "delayed"), u64(r, "shaped") + u64(r, "shape_flushed") + u64(r, "held"));
        EXPECT_EQ(u64(s, "packets"), packets);
        EXPECT_EQ(u64(s, "passed"), packets - drops);
        EXPECT_EQ(u64(s, "dropped"), drops);
        EXPECT_EQ(u64(s, "delayed"), m.delayed);
        EXPECT_EQ(u64(s, "shaped"), m.delayed);
        EXPECT_EQ(u64(s, "shape_flushed"), 0u);
        EXPECT_EQ(u64(s, "held"), 0u);
        EXPECT_EQ(u64(s, "shape_pool_full"), m.pool_full);
        EXPECT_EQ(u64(s, "delayed"), u64(s, "shaped") + u64(s, "shape_flushed") + u64(s, "held"));
    }

    // The whole check of one run: frames, spacing, stats.
    Outcome check_run(const std::vector<Arrival> &arrivals, const ShapeParams &p,
                      const ModelResult &m, const json &stats, const std::string &suffix) {
        Outcome o = outcome(arrivals, suffix);
        expect_model(arrivals, m, o, p);
        expect_spacing(arrivals, o, p);
        expect_stats(stats, m, arrivals.size());
        return o;
    }

    // tshark reads PASS without an error (skipped without tshark).
    void tshark_reads(const std::string &file) {
        const std::string tshark = "/usr/bin/tshark";
        if (!std::filesystem::exists(tshark)) return;
        const ProcessResult r = run_process({tshark, "-r", path(file), "-q"}, dir_);
        EXPECT_EQ(r.exit_code, 0) << "tshark -r " << file << ":\n" << r.err;
    }
};

std::string shape_rules(const std::string &rate, uint64_t burst, const std::string &queue,
                        const std::string &key = "{ ipv4: 32, ipv6: 128 }",
                        const std::string &extra = "") {
    return "rules:\n"
           "  - name: shaped\n"
           "    match: { proto: udp }\n"
           "    key: " +
           key + "\n" + extra + "    limit: { rate: " + rate + ", burst: " + std::to_string(burst) +
           " }\n"
           "    action: shape\n"
           "    queue: " +
           queue + "\n";
}

// Random arrivals of several sources, from a fixed seed.
std::vector<Arrival> random_sources(const std::vector<std::string> &sources, size_t count,
                                    uint64_t max_gap_ns, uint64_t seed,
                                    const std::string &dst = "198.18.255.1") {
    std::mt19937_64 rng(seed);
    Capture c;
    uint64_t t = kStartNs + 123'456'789;
    for (size_t i = 0; i < count; ++i) {
        t += rng() % max_gap_ns;
        c.add(t, sources[rng() % sources.size()], dst);
    }
    return c.done();
}

// ---------------------------------------------------------------------------------------------
// 1. The seeds' example.

TEST_F(ShapingScenario, TheSeedsBurstOf15At5PerSecondLeavesOver2Seconds) {
    const uint64_t t0 = kStartNs + 7 * kNsPerSec;
    Capture c;
    for (int i = 0; i < 15; ++i) c.add(t0, "198.18.0.1");
    const std::vector<Arrival> arrivals = c.done();
    ASSERT_NO_FATAL_FAILURE(write_capture(arrivals));
    const ShapeParams p{.interval_ns = ms(200), .burst = 5, .queue_packets = 10};
    const json s = replay_with(shape_rules("5/s", 5, "{ packets: 10 }"), "");
    ASSERT_FALSE(s.empty());
    const ModelResult m = TokenQueueModel(p).run(arrivals);
    const Outcome o = check_run(arrivals, p, m, s, "");

    // Worked out by hand too: 5 at t0, then one every 200 ms, in order, the last 2 s later.
    ASSERT_EQ(o.pass_order.size(), 15u);
    for (uint32_t i = 0; i < 15; ++i) {
        EXPECT_EQ(o.pass_order[i].first, i) << "in order";
        EXPECT_EQ(o.pass_order[i].second, i < 5 ? t0 : t0 + (i - 4) * ms(200)) << i;
    }
    const json &r = s.at("rules")[0];
    EXPECT_EQ(u64(r, "delayed"), 10u);
    EXPECT_EQ(u64(r, "shaped"), 10u);
    EXPECT_EQ(u64(r, "held"), 0u);
    EXPECT_EQ(u64(r, "shape_dropped"), 0u);
    EXPECT_EQ(u64(r, "longest_wait_ns"), 2 * kNsPerSec);
    EXPECT_TRUE(read_pcap(path("drop.pcap")).records.empty());

    // The same limit as GCRA (action drop): 5 pass, 10 dropped.
    const json g = replay_with(
        "rules:\n  - name: limited\n    match: { proto: udp }\n"
        "    key: { ipv4: 32, ipv6: 128 }\n    limit: { rate: 5/s, burst: 5 }\n"
        "    action: drop\n",
        "_gcra");
    ASSERT_FALSE(g.empty());
    const PcapFile gp = read_pcap(path("pass_gcra.pcap"));
    const PcapFile gd = read_pcap(path("drop_gcra.pcap"));
    ASSERT_EQ(gp.records.size(), 5u);
    EXPECT_EQ(gd.records.size(), 10u);
    for (size_t i = 0; i < 5; ++i) {
        EXPECT_EQ(gp.records[i].bytes, arrivals[i].frame);
        EXPECT_EQ(gp.records[i].ts_ns, t0);
    }
    EXPECT_EQ(u64(g.at("rules")[0], "refused"), 10u);
    EXPECT_EQ(u64(g, "delayed"), 0u);
    tshark_reads("pass.pcap");
}

// ---------------------------------------------------------------------------------------------
// 2. Several keys interleaved, random arrivals faster than the rate.

TEST_F(ShapingScenario, InterleavedKeysLeaveWhenTheModelSaysAndDropWhereItDrops) {
    // T = 25 ms; about 55/s a source on average, in random clumps.
    const std::vector<Arrival> arrivals =
        random_sources({"198.18.0.1", "198.18.0.2", "198.18.0.3"}, 900, ms(12), 2026);
    ASSERT_NO_FATAL_FAILURE(write_capture(arrivals));
    const ShapeParams p{.interval_ns = ms(25), .burst = 3, .queue_packets = 8};
    const json s = replay_with(shape_rules("40/s", 3, "{ packets: 8 }"), "");
    ASSERT_FALSE(s.empty());
    const ModelResult m = TokenQueueModel(p).run(arrivals);
    const Outcome o = check_run(arrivals, p, m, s, "");
    // The scenario exercises what it is about.
    EXPECT_GT(m.delayed, 100u);
    EXPECT_GT(m.queue_full, 20u);
    EXPECT_GT(expect_spacing(arrivals, o, p), 100u);
    EXPECT_EQ(deepest_queue(arrivals, o, p), 8u);
    tshark_reads("pass.pcap");
}

// ---------------------------------------------------------------------------------------------
// 3. The queue bound, read from the arrivals and the departures alone.

TEST_F(ShapingScenario, NoKeyEverHasMoreThanNPacketsWaiting) {
    for (const uint64_t n : {1u, 3u, 20u}) {
        SCOPED_TRACE("queue packets " + std::to_string(n));
        const std::vector<Arrival> arrivals = random_sources(
            {"198.18.1.1", "198.18.1.2", "198.18.1.3", "198.18.1.4"}, 1200, ms(4), 77 + n);
        ASSERT_NO_FATAL_FAILURE(write_capture(arrivals));
        const ShapeParams p{.interval_ns = ms(20), .burst = 2, .queue_packets = n};
        const std::string count = std::to_string(n);
        std::string suffix = "_";
        suffix += count;
        const json s =
            replay_with(shape_rules("50/s", 2, std::string("{ packets: ") + count + " }"), suffix);
        ASSERT_FALSE(s.empty());
        const ModelResult m = TokenQueueModel(p).run(arrivals);
        const Outcome o = check_run(arrivals, p, m, s, suffix);
        EXPECT_EQ(deepest_queue(arrivals, o, p), n) << "the bound is reached, never passed";
        EXPECT_GT(m.queue_full, 0u);
    }
}

// ---------------------------------------------------------------------------------------------
// 4. queue: { delay: D }.

TEST_F(ShapingScenario, ADelayBoundLetsNothingWaitLongerAndDropsWhatTheModelDrops) {
    const std::vector<Arrival> arrivals =
        random_sources({"198.18.2.1", "198.18.2.2"}, 600, ms(20), 4242);
    ASSERT_NO_FATAL_FAILURE(write_capture(arrivals));
    // T = 50 ms, so a wait of up to 180 ms is 3 packets and a bit: the bound falls between
    // departures, as a packet count could not put it.
    const ShapeParams p{.interval_ns = ms(50), .burst = 2, .queue_delay_ns = ms(180)};
    const json s = replay_with(shape_rules("20/s", 2, "{ delay: 180ms }"), "");
    ASSERT_FALSE(s.empty());
    const ModelResult m = TokenQueueModel(p).run(arrivals);
    const Outcome o = check_run(arrivals, p, m, s, "");
    uint64_t longest = 0;
    for (const Arrival &a : arrivals)
        if (o.passed_at[a.seq]) {
            ASSERT_GE(*o.passed_at[a.seq], a.ts_ns) << "frame " << a.seq << " left before it came";
            longest = std::max(longest, *o.passed_at[a.seq] - a.ts_ns);
        }
    EXPECT_LE(longest, ms(180));
    EXPECT_GT(longest, ms(130)) << "the scenario comes near the bound";
    EXPECT_EQ(longest, m.longest_wait_ns);
    EXPECT_GT(m.queue_full, 10u);
}

// ---------------------------------------------------------------------------------------------
// 5. Per destination: many sources to one server share its queue.

TEST_F(ShapingScenario, APerDestinationQueueSpacesEverySourceTogether) {
    std::mt19937_64 rng(5);
    Capture c;
    const uint64_t t0 = kStartNs + 3 * kNsPerSec;
    // 60 sources to one server over 300 ms (200/s against 100/s), and 20 to another server,
    // which has its own queue.
    for (int i = 0; i < 60; ++i)
        c.add(t0 + rng() % ms(300), "198.19.0." + std::to_string(i + 1), "198.18.1.1");
    for (int i = 0; i < 20; ++i)
        c.add(t0 + rng() % ms(300), "198.19.1." + std::to_string(i + 1), "198.18.1.2");
    const std::vector<Arrival> arrivals = c.done();
    ASSERT_NO_FATAL_FAILURE(write_capture(arrivals));
    const ShapeParams p{
        .interval_ns = ms(10), .burst = 1, .queue_packets = 100, .key_by_dst = true};
    const json s =
        replay_with(shape_rules("100/s", 1, "{ packets: 100 }", "{ dst: { ipv4: 32, ipv6: 128 } }",
                                "    reserve: { established: 0%, verified: 0%, known: 0% }\n"),
                    "");
    ASSERT_FALSE(s.empty());
    const ModelResult m = TokenQueueModel(p).run(arrivals);
    const Outcome o = check_run(arrivals, p, m, s, "");
    EXPECT_EQ(m.queue_full, 0u);

    // Server 1: its frames leave in arrival order, each T after the one before once the queue
    // has formed (the rate is exceeded from the start: only the first finds a token left).
    std::vector<uint64_t> times;
    for (const auto &[seq, ts] : o.pass_order)
        if (arrivals[seq].dst == "198.18.1.1") times.push_back(ts);
    ASSERT_EQ(times.size(), 60u);
    uint64_t spaced = 0;
    for (size_t i = 1; i < times.size(); ++i) {
        EXPECT_GE(times[i] - times[i - 1], ms(10)) << i;
        if (times[i] - times[i - 1] == ms(10)) ++spaced;
    }
    EXPECT_GT(spaced, 50u) << "a queue had formed";
    EXPECT_GT(u64(s.at("rules")[0], "delayed"), 50u);
}

// ---------------------------------------------------------------------------------------------
// 6. --shape-hold: the core's held share.

TEST_F(ShapingScenario, TheCoresHeldShareIsCountedExactlyAndTheRestIsDropped) {
    // Three sources at once, 6 frames each: each passes its first, the 15 others would wait,
    // but only 4 may be held on the core; 11 are dropped, counted shape_pool_full.
    const uint64_t t0 = kStartNs + kNsPerSec;
    Capture c;
    for (int i = 0; i < 6; ++i)
        for (const char *src : {"198.18.3.1", "198.18.3.2", "198.18.3.3"}) c.add(t0, src);
    const std::vector<Arrival> arrivals = c.done();
    ASSERT_NO_FATAL_FAILURE(write_capture(arrivals));
    const ShapeParams p{.interval_ns = ms(100), .burst = 1, .queue_packets = 1000, .pool = 4};
    const json s =
        replay_with(shape_rules("10/s", 1, "{ packets: 1000 }"), "", {"--shape-hold", "4"});
    ASSERT_FALSE(s.empty());
    const ModelResult m = TokenQueueModel(p).run(arrivals);
    EXPECT_EQ(m.pool_full, 11u);
    EXPECT_EQ(m.delayed, 4u);
    const Outcome o = check_run(arrivals, p, m, s, "");
    uint64_t in_drop = 0;
    for (const Arrival &a : arrivals) in_drop += o.dropped[a.seq];
    EXPECT_EQ(in_drop, 11u);
}

// The share is of what is held now: frames that left free their place. Clumps 2 s apart, each
// wholly released (within 400 ms) before the next comes: every clump finds the whole share
// free again. Clumps of 10 frames share replay's windows of 32; clumps of 32 are each a window
// of their own.
TEST_F(ShapingScenario, TheHeldShareIsFreedByFramesThatLeft) {
    for (const int size : {10, 32}) {
        SCOPED_TRACE("clumps of " + std::to_string(size));
        Capture c;
        for (uint64_t clump = 0; clump < 4; ++clump)
            for (int i = 0; i < size; ++i) c.add(kStartNs + clump * 2 * kNsPerSec, "198.18.3.9");
        const std::vector<Arrival> arrivals = c.done();
        ASSERT_NO_FATAL_FAILURE(write_capture(arrivals));
        const ShapeParams p{.interval_ns = ms(100), .burst = 1, .queue_packets = 1000, .pool = 4};
        const std::string suffix = std::to_string(size);
        const json s =
            replay_with(shape_rules("10/s", 1, "{ packets: 1000 }"), suffix, {"--shape-hold", "4"});
        ASSERT_FALSE(s.empty());
        const ModelResult m = TokenQueueModel(p).run(arrivals);
        // Per clump: 1 at once, 4 held (leaving 100 to 400 ms later), the rest dropped.
        EXPECT_EQ(m.delayed, 16u);
        EXPECT_EQ(m.pool_full, 4u * (size - 5));
        check_run(arrivals, p, m, s, suffix);
    }
}

// ---------------------------------------------------------------------------------------------
// 7. Two workers: each source has one owner core, whose queue is the one core's.

TEST_F(ShapingScenario, TwoWorkersGiveEachKeyTheSameDeparturesAsOne) {
    std::vector<std::string> sources;
    for (int i = 1; i <= 8; ++i) sources.push_back("198.18.4." + std::to_string(i * 17));
    const std::vector<Arrival> arrivals = random_sources(sources, 1600, ms(3), 99);
    ASSERT_NO_FATAL_FAILURE(write_capture(arrivals));
    const ShapeParams p{.interval_ns = ms(25), .burst = 2, .queue_packets = 6};
    const std::string rules = shape_rules("40/s", 2, "{ packets: 6 }");
    const json one = replay_with(rules, "_w1", {"--workers", "1"});
    const json two = replay_with(rules, "_w2", {"--workers", "2"});
    ASSERT_FALSE(one.empty());
    ASSERT_FALSE(two.empty());
    const ModelResult m = TokenQueueModel(p).run(arrivals);
    EXPECT_GT(m.delayed, 200u);
    EXPECT_GT(m.queue_full, 50u);
    const Outcome o1 = check_run(arrivals, p, m, one, "_w1");
    const Outcome o2 = check_run(arrivals, p, m, two, "_w2");
    uint64_t differ = 0;
    for (const Arrival &a : arrivals)
        if (o1.passed_at[a.seq] != o2.passed_at[a.seq] && ++differ <= 5)
            ADD_FAILURE() << "frame " << a.seq << " of " << a.src << ": "
                          << o1.passed_at[a.seq].value_or(0) << " on one worker, "
                          << o2.passed_at[a.seq].value_or(0) << " on two";
    EXPECT_EQ(differ, 0u);

    // Both cores had keys: with --shape-hold 1, one frame can wait per core, so 3 frames at once
    // from each of the 8 sources leave 1 frame held on one worker and 2 on two (STATS has no
    // per-core figures to tell it otherwise).
    Capture spread;
    for (int i = 0; i < 3; ++i)
        for (const std::string &src : sources) spread.add(kStartNs, src);
    ASSERT_NO_FATAL_FAILURE(write_capture(spread.done()));
    const json s1 = replay_with(rules, "_spread1", {"--workers", "1", "--shape-hold", "1"});
    const json s2 = replay_with(rules, "_spread2", {"--workers", "2", "--shape-hold", "1"});
    ASSERT_FALSE(s1.empty());
    ASSERT_FALSE(s2.empty());
    EXPECT_EQ(u64(s1, "delayed"), 1u);
    EXPECT_EQ(u64(s2, "delayed"), 2u) << "the 8 sources are all on one of the two cores";
}

// ---------------------------------------------------------------------------------------------
// 8. PASS in time order: released frames merged with the frames passed meanwhile.

TEST_F(ShapingScenario, PassIsInTimeOrderWithReleasedAndPassedFramesMerged) {
    std::mt19937_64 rng(8);
    Capture c;
    // Shaped UDP of two sources, and TCP the rule does not match, passed at its own time,
    // interleaved closely with the releases; held frames left at the end leave after it.
    uint64_t t = kStartNs;
    for (int i = 0; i < 1500; ++i) {
        t += rng() % ms(2);
        const uint64_t pick = rng() % 3;
        if (pick == 2)
            c.add(t, "198.18.5.9", "198.18.255.1", kProtoTcp);
        else
            c.add(t, pick == 0 ? "198.18.5.1" : "198.18.5.2");
    }
    const std::vector<Arrival> arrivals = c.done();
    ASSERT_NO_FATAL_FAILURE(write_capture(arrivals));
    const ShapeParams p{.interval_ns = ms(5), .burst = 4, .queue_packets = 50};
    const json s = replay_with(shape_rules("200/s", 4, "{ packets: 50 }"), "");
    ASSERT_FALSE(s.empty());
    const ModelResult m = TokenQueueModel(p).run(arrivals);
    const Outcome o = check_run(arrivals, p, m, s, "");  // counts backward steps: none
    // Releases do fall between passed frames, and some after the capture's end.
    uint64_t released_between = 0, after_end = 0;
    bool delayed_seen = false;
    for (const auto &[seq, ts] : o.pass_order) {
        if (m.fate[seq] == Fate::delayed) delayed_seen = true;
        if (m.fate[seq] == Fate::unmatched && delayed_seen) ++released_between;
        if (ts > arrivals.back().ts_ns) ++after_end;
    }
    EXPECT_GT(released_between, 100u);
    EXPECT_GT(after_end, 0u);
    EXPECT_GT(m.delayed, 200u);
    tshark_reads("pass.pcap");
}

}  // namespace
}  // namespace floodgate::test
