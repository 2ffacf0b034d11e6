// End-to-end scenarios through the real binary. Each test writes a rules file and a generated
// pcap into a fresh temporary directory, runs
//   $FLOODGATE_BIN replay --config rules.yaml --in trace.pcap --pass pass.pcap --drop drop.pcap
//                         --stats stats.json
// and then regenerates the same traffic through the reference model (tests/reference_model.h):
// every frame must come out of PASS.pcap or DROP.pcap as the model says, with its bytes and
// timestamp, in order, and STATS.json must hold the model's counters.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "control/config.h"
#include "control/prefix.h"
#include "dataplane/parse.h"  // the TCP flag bits only; the model itself uses no dataplane code
#include "tests/pcap_io.h"
#include "tests/pkt_builder.h"
#include "tests/reference_model.h"

extern char **environ;

namespace floodgate::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr uint64_t kNsPerUs = 1'000;
constexpr uint64_t kNsPerMs = 1'000'000;
constexpr uint64_t kNsPerSec = 1'000'000'000;
// Packet time starts at a realistic wall-clock time (November 2023) rather than at 0.
constexpr uint64_t kStartNs = 1'700'000'000 * kNsPerSec;

// ---------------------------------------------------------------------------------------------
// Traffic: a generator emits frames in timestamp order, each with what the model needs to know
// about it. It is called twice (once to write the trace, once to check the output), so the
// two-million-frame scenario never holds its frames in memory.

struct GenPacket {
    Frame frame;
    ModelPacket info;
};
using Sink = std::function<void(const GenPacket &)>;
using Generator = std::function<void(const Sink &)>;

uint64_t splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

IpAddr a4(const char *text) {
    IpAddr a{};
    const Ipv4Addr b = ipv4_addr(text);
    std::copy(b.begin(), b.end(), a.begin());
    return a;
}

IpAddr a6(const char *text) {
    return ipv6_addr(text);
}

Ipv4Addr first4(const IpAddr &a) {
    return {a[0], a[1], a[2], a[3]};
}

const IpAddr kDst4 = a4("198.18.255.1");
const IpAddr kDst6 = a6("2001:db8:ffff:ffff::1");

struct Flow {
    uint8_t family = 4;
    IpAddr src{};
    IpAddr dst{};
    uint8_t proto = kProtoUdp;
    uint16_t src_port = 40000;
    uint16_t dst_port = 53;
    uint8_t tcp_flags = 0;
    uint16_t qinq = 0;  // outer 802.1ad tag, 0 for none
    uint16_t vlan = 0;  // 802.1Q tag, 0 for none
    size_t payload_bytes = 18;
};

Flow flow4(const char *src, uint8_t proto, uint16_t dst_port = 0, uint8_t tcp_flags = 0) {
    return {.family = 4,
            .src = a4(src),
            .dst = kDst4,
            .proto = proto,
            .dst_port = dst_port,
            .tcp_flags = tcp_flags};
}

Flow flow6(const char *src, uint8_t proto, uint16_t dst_port = 0, uint8_t tcp_flags = 0) {
    return {.family = 6,
            .src = a6(src),
            .dst = kDst6,
            .proto = proto,
            .dst_port = dst_port,
            .tcp_flags = tcp_flags};
}

GenPacket make_packet(uint64_t ts_ns, const Flow &f) {
    PacketBuilder b;
    if (f.qinq != 0) b.qinq(f.qinq);
    if (f.vlan != 0) b.vlan(f.vlan);
    if (f.family == 4)
        b.ipv4(first4(f.src), first4(f.dst));
    else
        b.ipv6(f.src, f.dst);
    const bool ports = f.proto == kProtoTcp || f.proto == kProtoUdp;
    switch (f.proto) {
        case kProtoTcp:
            b.tcp(f.src_port, f.dst_port, f.tcp_flags);
            break;
        case kProtoUdp:
            b.udp(f.src_port, f.dst_port);
            break;
        case kProtoIcmp:
            b.icmp(8);
            break;
        case kProtoIcmpv6:
            b.icmpv6(128);
            break;
        default:
            b.ip_proto(f.proto);
    }
    b.payload(f.payload_bytes);
    GenPacket p{b.build(), {}};
    p.info = {.ts_ns = ts_ns,
              .kind = FrameKind::ip,
              .family = f.family,
              .src = f.src,
              .dst = f.dst,
              .proto = f.proto,
              .has_l4 = ports || f.proto == kProtoIcmp || f.proto == kProtoIcmpv6,
              .src_port = ports ? f.src_port : uint16_t{0},
              .dst_port = ports ? f.dst_port : uint16_t{0},
              .tcp_flags = f.proto == kProtoTcp ? f.tcp_flags : uint8_t{0}};
    return p;
}

GenPacket non_ip_frame(uint64_t ts_ns, Frame frame) {
    return {std::move(frame), {.ts_ns = ts_ns, .kind = FrameKind::non_ip}};
}

GenPacket malformed_frame(uint64_t ts_ns, Frame frame, const char *reason) {
    return {std::move(frame),
            {.ts_ns = ts_ns, .kind = FrameKind::malformed, .malformed_reason = reason}};
}

// A small scenario's traffic, put together from periodic flows, then sorted.
class Traffic {
  public:
    // count frames made by make(ts), the first at start_ns, then every period_ns, each moved
    // later by up to jitter_ns (deterministic).
    void every(uint64_t start_ns, uint64_t period_ns, size_t count,
               const std::function<GenPacket(uint64_t)> &make, uint64_t jitter_ns = 0) {
        for (size_t k = 0; k < count; ++k) {
            const uint64_t jitter = jitter_ns == 0 ? 0 : splitmix64(packets_.size()) % jitter_ns;
            packets_.push_back(make(start_ns + k * period_ns + jitter));
        }
    }
    void every(uint64_t start_ns, uint64_t period_ns, size_t count, const Flow &f,
               uint64_t jitter_ns = 0) {
        every(
            start_ns, period_ns, count, [&f](uint64_t ts) { return make_packet(ts, f); },
            jitter_ns);
    }

    // In timestamp order (ties keep insertion order); for a microsecond trace the timestamps are
    // cut to whole microseconds first, as the file will carry them.
    Generator generator(PcapPrecision precision) const {
        auto sorted = std::make_shared<std::vector<GenPacket>>(packets_);
        std::stable_sort(
            sorted->begin(), sorted->end(),
            [](const GenPacket &x, const GenPacket &y) { return x.info.ts_ns < y.info.ts_ns; });
        if (precision == PcapPrecision::micro)
            for (GenPacket &p : *sorted) p.info.ts_ns -= p.info.ts_ns % kNsPerUs;
        return [sorted](const Sink &sink) {
            for (const GenPacket &p : *sorted) sink(p);
        };
    }

  private:
    std::vector<GenPacket> packets_;
};

// ---------------------------------------------------------------------------------------------
// Running the binary.

struct ProcessResult {
    int exit_code = -1;
    std::string err;
};

std::string read_file(const fs::path &p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// Runs argv with stdout and stderr sent to files in dir; no shell, so no quoting to get wrong.
ProcessResult run_process(const std::vector<std::string> &argv, const fs::path &dir) {
    const std::string out_path = (dir / "stdout.txt").string();
    const std::string err_path = (dir / "stderr.txt").string();
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    std::vector<char *> args;
    for (const std::string &a : argv) args.push_back(const_cast<char *>(a.c_str()));
    args.push_back(nullptr);
    pid_t pid;
    const int rc = posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) return {-1, "cannot start " + argv[0] + ": " + std::strerror(rc)};
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    ProcessResult r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.err = read_file(err_path);
    return r;
}

// ---------------------------------------------------------------------------------------------
// The fixture: one temporary directory per test.

using Observer = std::function<void(const GenPacket &, const ModelDecision &)>;

class Scenario : public ::testing::Test {
  protected:
    void SetUp() override {
        char tmpl[] = "/tmp/floodgate_scenario_XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr) << std::strerror(errno);
        dir_ = tmpl;
    }

    void TearDown() override {
        std::error_code ec;
        fs::remove_all(dir_, ec);
    }

    std::string path(const std::string &name) const { return (dir_ / name).string(); }

    void write_text(const std::string &name, const std::string &text) {
        std::ofstream out(path(name), std::ios::binary);
        out << text;
        ASSERT_TRUE(out.good()) << "cannot write " << path(name);
    }

    void write_trace(const Generator &gen, PcapPrecision precision) {
        PcapWriter w(path("trace.pcap"), precision);
        uint64_t unaligned = 0;
        gen([&](const GenPacket &p) {
            // The model sees p.info.ts_ns; a microsecond file must carry exactly that.
            if (precision == PcapPrecision::micro && p.info.ts_ns % kNsPerUs != 0) ++unaligned;
            w.write(p.info.ts_ns, p.frame);
        });
        w.close();
        ASSERT_EQ(unaligned, 0u) << "generator bug: sub-microsecond times in a microsecond trace";
    }

    static std::string floodgate_bin() {
        const char *bin = std::getenv("FLOODGATE_BIN");
        return bin == nullptr ? "" : bin;
    }

    ProcessResult run_replay(const std::string &config, const std::string &suffix) {
        return run_process(
            {floodgate_bin(), "replay", "--config", path(config), "--in", path("trace.pcap"),
             "--pass", path("pass" + suffix + ".pcap"), "--drop", path("drop" + suffix + ".pcap"),
             "--stats", path("stats" + suffix + ".json")},
            dir_);
    }

    // Replays trace.pcap under rules.yaml; outputs are pass<suffix>.pcap and so on.
    void replay(const std::string &suffix = "") {
        ASSERT_FALSE(floodgate_bin().empty()) << "set FLOODGATE_BIN to the floodgate binary";
        const ProcessResult r = run_replay("rules.yaml", suffix);
        ASSERT_EQ(r.exit_code, 0) << "floodgate replay failed; stderr:\n" << r.err;
    }

    // Regenerates the traffic through the model and compares it with pass.pcap, drop.pcap and
    // stats.json. obs, when given, sees every packet with the model's decision.
    void check_against_model(const Generator &gen, const Observer &obs = nullptr) {
        Config cfg;
        try {
            cfg = load_config(path("rules.yaml"));
        } catch (const ConfigError &e) {
            FAIL() << "the model cannot load the rules: " << e.what();
        }
        model_ = std::make_unique<ReferenceModel>(std::move(cfg));

        PcapReader pass(path("pass.pcap"));
        PcapReader drop(path("drop.pcap"));
        uint64_t index = 0;
        uint64_t mismatches = 0;
        PcapRecord rec;
        gen([&](const GenPacket &p) {
            const ModelDecision d = model_->decide(p.info);
            if (obs) obs(p, d);
            PcapReader &out = d.pass ? pass : drop;
            std::string problem;
            if (!out.next(&rec))
                problem = "missing (the file ends early)";
            else if (rec.ts_ns != p.info.ts_ns)
                problem = "timestamp " + std::to_string(rec.ts_ns) + " there";
            else if (rec.bytes != p.frame)
                problem = "different bytes there";
            if (!problem.empty() && ++mismatches <= 5)
                ADD_FAILURE() << "frame " << index << " (ts " << p.info.ts_ns << ") expected in "
                              << (d.pass ? "PASS" : "DROP") << ".pcap: " << problem;
            ++index;
        });
        EXPECT_EQ(mismatches, 0u) << "frames out of place (first 5 shown above)";
        EXPECT_FALSE(pass.next(&rec)) << "PASS.pcap has more frames than the model passed";
        EXPECT_FALSE(drop.next(&rec)) << "DROP.pcap has more frames than the model dropped";

        std::ifstream in(path("stats.json"));
        ASSERT_TRUE(in.good()) << "no stats.json";
        stats_ = json::parse(in);
        check_stats();
    }

    // The whole scenario: rules, trace, replay, comparison.
    void run(const std::string &rules_yaml, const Generator &gen, PcapPrecision precision,
             const Observer &obs = nullptr) {
        ASSERT_NO_FATAL_FAILURE(write_text("rules.yaml", rules_yaml));
        ASSERT_NO_FATAL_FAILURE(write_trace(gen, precision));
        ASSERT_NO_FATAL_FAILURE(replay());
        ASSERT_NO_FATAL_FAILURE(check_against_model(gen, obs));
    }

    static uint64_t u64(const json &j, const char *field) {
        EXPECT_TRUE(j.contains(field) && j.at(field).is_number_integer()) << "no " << field;
        return j.contains(field) ? j.at(field).get<uint64_t>() : ~0ull;
    }

    void check_stats() {
        const ModelCounters &c = model_->counters();
        const Config &cfg = model_->config();
        EXPECT_EQ(u64(stats_, "packets"), c.packets);
        EXPECT_EQ(u64(stats_, "passed"), c.passed);
        EXPECT_EQ(u64(stats_, "dropped"), c.dropped);
        EXPECT_EQ(u64(stats_, "malformed"), c.malformed);
        EXPECT_EQ(u64(stats_, "non_ip"), c.non_ip);
        EXPECT_EQ(u64(stats_, "allow_hits"), c.allow_hits);
        EXPECT_EQ(u64(stats_, "block_hits"), c.block_hits);
        using ReasonCounts = std::map<std::string, uint64_t>;
        EXPECT_EQ(stats_.value("malformed_reasons", json::object()).get<ReasonCounts>(),
                  c.malformed_reasons);

        ASSERT_TRUE(stats_.contains("table"));
        const json &table = stats_.at("table");
        for (const char *f : {"capacity", "occupancy", "reclaims", "bytes_per_entry"})
            u64(table, f);
        EXPECT_EQ(u64(table, "full_events"), 0u) << "no scenario here fills the table";

        ASSERT_TRUE(stats_.contains("rules") && stats_.at("rules").is_array());
        const json &rules = stats_.at("rules");
        ASSERT_EQ(rules.size(), cfg.rules.size());
        for (size_t i = 0; i < cfg.rules.size(); ++i) {
            const Rule &rule = cfg.rules[i];
            const ModelRuleCounters &want = c.rules[i];
            const json &got = rules[i];
            SCOPED_TRACE("rule " + rule.name);
            EXPECT_EQ(got.value("name", ""), rule.name);
            EXPECT_EQ(u64(got, "matched"), want.matched);
            EXPECT_EQ(u64(got, "passed"), want.passed);
            EXPECT_EQ(u64(got, "refused"), want.refused);
            EXPECT_EQ(u64(got, "shadow_refused"), want.shadow_refused);
            for (const char *f : {"table_full_shared", "table_full_pass", "table_full_drop"})
                EXPECT_EQ(u64(got, f), 0u) << f;
            check_top_refused(got.value("top_refused", json::array()), rule, want);
        }
    }

    // top_refused counts what the rule's refused and shadow_refused count, per key. With at
    // most 10 keys the summary must be exact; with more, it must still be 10 entries, most first.
    static void check_top_refused(const json &top, const Rule &rule, const ModelRuleCounters &c) {
        ASSERT_TRUE(top.is_array());
        ASSERT_EQ(top.size(), std::min<size_t>(10, c.refused_by_key.size())) << top.dump();
        std::map<SourceKey, uint64_t> got;
        uint64_t previous = ~0ull;
        for (const json &entry : top) {
            const std::string text = entry.value("source", "");
            std::string why;
            const std::optional<Prefix> p = parse_prefix(text, &why);
            ASSERT_TRUE(p.has_value()) << "top_refused source '" << text << "': " << why;
            EXPECT_EQ(p->len, p->family == 4 ? rule.key_ipv4_len : rule.key_ipv6_len) << text;
            const uint64_t count = u64(entry, "count");
            EXPECT_LE(count, previous) << "top_refused is not sorted, most first";
            previous = count;
            got[SourceKey{p->family, p->addr}] = count;
        }
        if (c.refused_by_key.size() <= 10) {
            EXPECT_EQ(got, c.refused_by_key) << top.dump();
        }
    }

    fs::path dir_;
    std::unique_ptr<ReferenceModel> model_;
    json stats_;
};

uint64_t ms(uint64_t n) {
    return n * kNsPerMs;
}
uint64_t sec(uint64_t n) {
    return n * kNsPerSec;
}
uint64_t per_second(uint64_t n) {
    return kNsPerSec / n;
}  // period of a rate

SourceKey key_of(uint8_t family, const IpAddr &addr, unsigned len) {
    SourceKey k{family, addr};
    mask_addr(&k.addr, len);
    return k;
}

uint64_t refused_for(const ModelRuleCounters &c, const SourceKey &k) {
    const auto it = c.refused_by_key.find(k);
    return it == c.refused_by_key.end() ? 0 : it->second;
}

// ---------------------------------------------------------------------------------------------
// (a) IPv4 sources over and under their limits.

constexpr const char *kRulesPerSource = R"(# IPv4 sources over and under one per-source UDP limit
rules:
  - name: udp_per_source
    match: { proto: udp }
    key: { ipv4: 32, ipv6: 64 }
    limit: { rate: 20/s, burst: 4 }
    action: drop
    mode: enforce
)";

TEST_F(Scenario, Ipv4SourcesOverAndUnderTheirLimits) {
    Traffic t;
    t.every(kStartNs + ms(3), ms(200), 30, flow4("198.18.0.10", kProtoUdp, 53));  // 5/s
    // Exactly at the rate, one every T: tat == now each time, never refused.
    t.every(kStartNs + ms(1), per_second(20), 120, flow4("198.18.0.11", kProtoUdp, 53));
    t.every(kStartNs, 28'571 * kNsPerUs, 210, flow4("198.18.0.12", kProtoUdp, 123),
            ms(3));  // about 35/s, jittered
    t.every(kStartNs + ms(5), per_second(50), 300, flow4("198.18.0.12", kProtoTcp, 443, kTcpAck));
    for (uint64_t burst = 0; burst < 4; ++burst)  // 12 back to back every 1.5 s
        t.every(kStartNs + burst * ms(1500), kNsPerUs, 12, flow4("198.18.0.13", kProtoUdp, 53));
    for (int host = 1; host <= 8; ++host) {
        const std::string src = "198.18.1." + std::to_string(host);
        t.every(kStartNs + host * 1'300 * kNsPerUs, ms(10), 600,
                flow4(src.c_str(), kProtoUdp, 4000 + host));  // 100/s
    }
    ASSERT_NO_FATAL_FAILURE(
        run(kRulesPerSource, t.generator(PcapPrecision::micro), PcapPrecision::micro));

    // The scenario exercises both sides of the limit.
    const ModelRuleCounters &r = model_->counters().rules[0];
    EXPECT_EQ(refused_for(r, key_of(4, a4("198.18.0.10"), 32)), 0u);
    EXPECT_EQ(refused_for(r, key_of(4, a4("198.18.0.11"), 32)), 0u);
    EXPECT_GT(refused_for(r, key_of(4, a4("198.18.0.12"), 32)), 0u);
    EXPECT_GT(refused_for(r, key_of(4, a4("198.18.0.13"), 32)), 0u);
    EXPECT_GT(refused_for(r, key_of(4, a4("198.18.1.8"), 32)), 0u);
}

// ---------------------------------------------------------------------------------------------
// (b) IPv6 sources rotating inside one /64.

constexpr const char *kRulesIpv6 = R"(rules:
  # One limit per /64: a host that owns a /64 cannot escape it by rotating addresses.
  - name: per64
    key: { ipv4: 32, ipv6: 64 }
    limit: { rate: 10/s, burst: 5 }
  # Would one per address be tighter? Shadow mode counts, never drops.
  - name: per128_shadow
    key: { ipv4: 32, ipv6: 128 }
    limit: { rate: 2/s, burst: 2 }
    mode: shadow
)";

TEST_F(Scenario, Ipv6SourcesRotatingInsideOneSlash64) {
    Traffic t;
    size_t rotation = 0;
    t.every(kStartNs + 17, per_second(150), 600, [&rotation](uint64_t ts) {
        Flow f = flow6("2001:db8:1:2::", kProtoUdp, 443);
        const uint64_t low = splitmix64(rotation++);
        for (int i = 0; i < 8; ++i) f.src[8 + i] = static_cast<uint8_t>(low >> (8 * i));
        return make_packet(ts, f);
    });
    t.every(kStartNs + 3'001, per_second(8), 32, flow6("2001:db8:1:3::7", kProtoTcp, 22, kTcpAck));
    size_t cycle = 0;
    t.every(kStartNs + 999, per_second(12), 48, [&cycle](uint64_t ts) {  // 4 addresses, 3/s each
        Flow f = flow6("2001:db8:1:4::", kProtoUdp, 53);
        f.src[15] = static_cast<uint8_t>(1 + cycle++ % 4);
        return make_packet(ts, f);
    });
    t.every(kStartNs + 123'457, per_second(5), 20, flow4("198.18.2.2", kProtoUdp, 53));
    ASSERT_NO_FATAL_FAILURE(run(kRulesIpv6, t.generator(PcapPrecision::nano), PcapPrecision::nano));

    const ModelCounters &c = model_->counters();
    // The rotating host is limited as one source: of its 600 frames over 4 s, the burst of 5
    // and then 10/s get through.
    const uint64_t rotator_passed =
        600 - refused_for(c.rules[0], key_of(6, a6("2001:db8:1:2::"), 64));
    EXPECT_GE(rotator_passed, 40u);
    EXPECT_LE(rotator_passed, 50u);
    EXPECT_EQ(refused_for(c.rules[0], key_of(6, a6("2001:db8:1:3::"), 64)), 0u);
    EXPECT_EQ(c.rules[1].refused, 0u);
    EXPECT_GT(c.rules[1].shadow_refused, 0u);
}

// ---------------------------------------------------------------------------------------------
// (c) Several rules on one packet: the first refusing rule is blamed, a refused packet consumes
// nothing in any rule.

constexpr const char *kRulesSeveral = R"(rules:
  - name: dns
    match: { proto: udp, dst_port: [53, 5353] }
    key: { ipv4: 32, ipv6: 64 }
    limit: { rate: 10/s, burst: 3 }
  - name: syn_high_ports
    match: { proto: tcp, tcp_flags: syn, dst_port: "1000-2000" }
    limit: { rate: 5/s, burst: 2 }
  - name: per_net
    match: { src: [198.18.0.0/16, 2001:db8::/32] }
    key: { ipv4: 24, ipv6: 48 }
    limit: { rate: 40/s, burst: 10 }
)";

TEST_F(Scenario, SeveralRulesOnOnePacket) {
    Traffic t;
    const uint64_t s = kStartNs;
    t.every(s, per_second(30), 120, flow4("198.18.5.1", kProtoUdp, 53));          // over dns
    t.every(s + ms(7), per_second(8), 32, flow4("198.18.5.2", kProtoUdp, 5353));  // under dns
    for (int host = 3; host <= 10; ++host) {  // 48/s more into 198.18.5.0/24: over per_net
        const std::string src = "198.18.5." + std::to_string(host);
        t.every(s + host * 1'700 * kNsPerUs, per_second(6), 24,
                flow4(src.c_str(), kProtoTcp, 443, kTcpAck));
    }
    t.every(s + ms(2), per_second(12), 48, flow4("198.18.6.1", kProtoTcp, 1500, kTcpSyn));
    t.every(s + ms(4), per_second(3), 12, flow4("198.18.6.2", kProtoTcp, 1999, kTcpSyn | kTcpAck));
    t.every(s + ms(6), per_second(20), 80, flow4("198.18.6.2", kProtoTcp, 80, kTcpSyn));
    t.every(s + ms(1), per_second(25), 100, flow6("2001:db8:5:1::1", kProtoUdp, 53));
    t.every(s + ms(3), per_second(25), 100, flow6("2001:db8:5:2::1", kProtoUdp, 53));
    t.every(s + ms(9), per_second(50), 200, flow4("198.18.7.1", kProtoIcmp));
    t.every(s + ms(8), per_second(5), 20, flow4("198.19.3.3", kProtoUdp, 53));  // dns only

    uint64_t blamed_among_several = 0;  // refused by two or more rules at once
    uint64_t refused_while_others_admit = 0;
    const Observer obs = [&](const GenPacket &, const ModelDecision &d) {
        if (d.refusing_rules >= 2) ++blamed_among_several;
        if (!d.pass && d.matching_rules > d.refusing_rules) ++refused_while_others_admit;
    };
    ASSERT_NO_FATAL_FAILURE(
        run(kRulesSeveral, t.generator(PcapPrecision::micro), PcapPrecision::micro, obs));

    const ModelCounters &c = model_->counters();
    for (const ModelRuleCounters &r : c.rules) EXPECT_GT(r.refused, 0u);
    EXPECT_GT(blamed_among_several, 0u);
    EXPECT_GT(refused_while_others_admit, 0u);
}

// ---------------------------------------------------------------------------------------------
// (d) Shadow mode: everything passes, would-be refusals are counted exactly.

constexpr const char *kRulesShadow = R"(rules:
  - name: udp_shadow
    match: { proto: udp }
    limit: { rate: 10/s, burst: 2 }
    mode: shadow
  - name: all_shadow
    key: { ipv4: 16, ipv6: 32 }
    limit: { rate: 50/s, burst: 5 }
    mode: shadow
    on_table_full: pass
)";

TEST_F(Scenario, ShadowModePassesEverything) {
    Traffic t;
    t.every(kStartNs, per_second(30), 90, flow4("198.18.20.1", kProtoUdp, 53));
    t.every(kStartNs + ms(1), per_second(5), 15, flow4("198.18.20.2", kProtoUdp, 53));
    t.every(kStartNs + ms(2), per_second(80), 240, flow4("198.18.21.1", kProtoTcp, 80, kTcpSyn));
    t.every(kStartNs + ms(3), per_second(15), 45, flow6("2001:db8:20::1", kProtoUdp, 123));
    t.every(kStartNs + ms(4), per_second(70), 210, flow6("2001:db8:20::2", kProtoIcmpv6));
    ASSERT_NO_FATAL_FAILURE(
        run(kRulesShadow, t.generator(PcapPrecision::micro), PcapPrecision::micro));

    const ModelCounters &c = model_->counters();
    EXPECT_EQ(c.dropped, 0u);
    EXPECT_EQ(c.passed, c.packets);
    for (const ModelRuleCounters &r : c.rules) {
        EXPECT_EQ(r.refused, 0u);
        EXPECT_GT(r.shadow_refused, 0u);
    }
}

// ---------------------------------------------------------------------------------------------
// (e) Malformed and non-IP frames, VLAN and QinQ tags, allow and block prefixes, fragments,
// nanosecond timestamps.

constexpr const char *kRulesMixed =
    R"(# allow and block share 198.19.0.0/16: the longest prefix decides.
allow: [198.19.1.0/24, 2001:db8:ffff:1::/64]
block: [198.19.0.0/16, 198.19.1.128/25, 2001:db8:ffff::/48]
table: { entries_per_core: 4096 }
rules:
  - name: dns
    match: { proto: udp, dst_port: 53 }
    limit: { rate: 5/s, burst: 1 }
  - name: all
    key: { ipv4: 32, ipv6: 64 }
    limit: { rate: 10/s, burst: 2 }
)";

// One of two IPv4 fragments of a UDP datagram to port 53 from 198.18.11.1.
GenPacket udp_fragment(uint64_t ts_ns, bool first) {
    GenPacket p = make_packet(ts_ns, flow4("198.18.11.1", kProtoUdp, 53));
    PacketBuilder b;
    b.ipv4(first4(p.info.src), first4(p.info.dst));
    if (first) {
        b.ipv4_fragment(0, true).udp(p.info.src_port, p.info.dst_port);
    } else {
        // A later fragment carries no L4 header, so the model sees no ports either.
        b.ipv4_fragment(3, false).ip_proto(kProtoUdp);
        p.info.has_l4 = false;
        p.info.src_port = 0;
        p.info.dst_port = 0;
    }
    p.frame = b.payload(16).build();
    return p;
}

Traffic mixed_traffic() {
    Traffic t;
    const uint64_t s = kStartNs;
    // Allowed, blocked, and blocked inside an allowed /24.
    t.every(s + 101, per_second(100), 300, flow4("198.19.1.5", kProtoUdp, 53));
    t.every(s + 203, per_second(20), 60, flow4("198.19.1.200", kProtoUdp, 53));
    t.every(s + 307, per_second(20), 60, flow4("198.19.2.1", kProtoTcp, 80, kTcpSyn));
    t.every(s + 401, per_second(50), 150, flow6("2001:db8:ffff:1::5", kProtoUdp, 53));
    t.every(s + 503, per_second(20), 60, flow6("2001:db8:ffff:2::5", kProtoUdp, 53));
    // Tagged traffic, limited like any other.
    Flow tagged = flow4("198.18.9.9", kProtoUdp, 53);
    tagged.vlan = 100;
    t.every(s + 601, per_second(50), 150, tagged);
    Flow double_tagged = flow6("2001:db8:9::9", kProtoTcp, 443, kTcpAck);
    double_tagged.qinq = 200;
    double_tagged.vlan = 100;
    t.every(s + 709, per_second(30), 90, double_tagged);
    t.every(s + 811, per_second(5), 15, flow4("198.18.10.1", kProtoTcp, 22, kTcpPsh | kTcpAck));
    t.every(s + 907, per_second(15), 45, flow6("2001:db8:9:1::1", kProtoIcmpv6));
    // Fragment pairs: the first has ports (dns matches), the second has none (only "all").
    t.every(s + 1'009, per_second(20), 60, [](uint64_t ts) { return udp_fragment(ts, true); });
    t.every(s + 1'009 + ms(1), per_second(20), 60,
            [](uint64_t ts) { return udp_fragment(ts, false); });
    // Not IP: passed and counted.
    t.every(s + 1'103, ms(100), 30, [](uint64_t ts) {
        return non_ip_frame(ts, PacketBuilder().eth(kEtherTypeArp).payload(28).build());
    });
    t.every(s + 1'201, ms(250), 12, [](uint64_t ts) {
        return non_ip_frame(ts, PacketBuilder().eth(kEtherTypeArp).vlan(100).payload(28).build());
    });
    t.every(s + 1'301, sec(1), 3, [](uint64_t ts) {
        return non_ip_frame(ts, PacketBuilder().eth(kEtherTypeLldp).payload(60).build());
    });
    // Malformed, some from allowed or blocked sources: parsing comes first.
    const auto bad = [&t](uint64_t start, uint64_t period, size_t n, Frame f, const char *why) {
        t.every(start, period, n, [&](uint64_t ts) { return malformed_frame(ts, f, why); });
    };
    bad(s + 1'409, ms(200), 15,
        PacketBuilder().ipv4("198.19.1.5", "198.18.255.1").ipv4_ihl(4).udp(1, 53).build(),
        "ipv4_bad_ihl");
    bad(s + 1'511, ms(300), 10,
        PacketBuilder().ipv6("2001:db8:9::9", "2001:db8::1").udp(1, 53).truncate(14 + 30).build(),
        "ipv6_truncated");
    bad(s + 1'601, ms(500), 6,
        PacketBuilder()
            .ipv4("198.19.2.1", "198.18.255.1")
            .udp(1, 53)
            .payload(20)
            .truncate(14 + 30)
            .build(),
        "ipv4_bad_total_length");
    bad(s + 1'703, ms(400), 8,
        PacketBuilder().ipv4("198.18.9.9", "198.18.255.1").udp(1, 53).ipv4_total_length(24).build(),
        "l4_truncated");
    bad(s + 1'801, sec(1), 3,
        PacketBuilder()
            .qinq(1)
            .vlan(2)
            .vlan(3)
            .vlan(4)
            .vlan(5)
            .ipv4("198.18.9.9", "198.18.0.1")
            .udp(1, 53)
            .build(),
        "too_many_vlan_tags");
    bad(s + 1'907, ms(700), 5,
        PacketBuilder()
            .ipv6("2001:db8:9::9", "2001:db8::1")
            .udp(1, 53)
            .ipv6_payload_length(900)
            .build(),
        "ipv6_bad_payload_length");
    bad(s + 2'003, ms(900), 4,
        PacketBuilder().ipv4("198.18.9.9", "198.18.0.1").ip_version(7).udp(1, 53).build(),
        "ipv4_bad_version");
    bad(s + 2'111, sec(1), 3, PacketBuilder().truncate(10).build(), "eth_truncated");
    return t;
}

TEST_F(Scenario, MalformedNonIpTaggedAllowAndBlock) {
    const Traffic t = mixed_traffic();
    ASSERT_NO_FATAL_FAILURE(
        run(kRulesMixed, t.generator(PcapPrecision::nano), PcapPrecision::nano));
    const ModelCounters &c = model_->counters();
    EXPECT_GT(c.allow_hits, 0u);
    EXPECT_GT(c.block_hits, 0u);
    EXPECT_EQ(c.malformed_reasons.size(), 8u);
    EXPECT_EQ(c.non_ip, 45u);
    for (const ModelRuleCounters &r : c.rules) EXPECT_GT(r.refused, 0u);
}

// ---------------------------------------------------------------------------------------------
// (f) Two million single-packet spoofed sources with three heavy hitters among them: the table
// reclaims expired entries and never fills, the heavy hitters stay exactly limited, and nobody
// else is refused.

constexpr const char *kRulesFlood = R"(table: { entries_per_core: 65536 }
rules:
  - name: flood
    key: { ipv4: 32, ipv6: 128 }
    limit: { rate: 10/s, burst: 5 }
)";

constexpr uint64_t kSpoofedSources = 2'000'000;
constexpr uint64_t kSpoofSpacingNs = 20 * kNsPerUs;  // 50,000 new sources a second, 40 s

// Spoofed source i, distinct for every i: one in 32 is IPv4 in 198.19.0.0/16, the rest IPv6
// with an odd-multiplier (so bijective) scramble of i as the low 64 bits in 2001:db8:8000::/48.
Flow spoofed_flow(uint64_t i) {
    if (i % 32 == 0) {
        const uint64_t j = i / 32;  // < 65536
        Flow f = flow4("198.19.0.0", kProtoUdp, 80);
        f.src[2] = static_cast<uint8_t>(j >> 8);
        f.src[3] = static_cast<uint8_t>(j);
        f.payload_bytes = 0;
        return f;
    }
    Flow f = flow6("2001:db8:8000::", kProtoUdp, 80);
    const uint64_t low = i * 0x9e3779b97f4a7c15ull;
    for (int b = 0; b < 8; ++b) f.src[8 + b] = static_cast<uint8_t>(low >> (8 * (7 - b)));
    f.src_port = static_cast<uint16_t>(1024 + i % 60000);
    f.payload_bytes = 0;
    return f;
}

struct HeavyHitter {
    Flow flow;
    uint64_t period_ns;
};

std::vector<HeavyHitter> heavy_hitters() {
    return {{flow4("198.18.0.1", kProtoUdp, 53), per_second(1000)},
            {flow6("2001:db8:1::1", kProtoTcp, 80, kTcpSyn), per_second(500)},
            {flow4("198.18.0.2", kProtoUdp, 123), per_second(250)}};
}

Generator flood_traffic() {
    return [](const Sink &sink) {
        std::vector<HeavyHitter> heavy = heavy_hitters();
        std::vector<uint64_t> next_ns;
        for (size_t h = 0; h < heavy.size(); ++h) next_ns.push_back(kStartNs + (7 + h) * kNsPerUs);
        for (uint64_t i = 0; i < kSpoofedSources; ++i) {
            const uint64_t ts = kStartNs + i * kSpoofSpacingNs;
            for (size_t h = 0; h < heavy.size(); ++h)
                for (; next_ns[h] <= ts; next_ns[h] += heavy[h].period_ns)
                    sink(make_packet(next_ns[h], heavy[h].flow));
            sink(make_packet(ts, spoofed_flow(i)));
        }
    };
}

TEST_F(Scenario, TwoMillionSpoofedSourcesWithThreeHeavyHitters) {
    ASSERT_NO_FATAL_FAILURE(run(kRulesFlood, flood_traffic(), PcapPrecision::micro));

    const ModelCounters &c = model_->counters();
    const Rule &rule = model_->config().rules[0];
    const ModelRuleCounters &r = c.rules[0];
    // The model's own view: exactly the heavy hitters are refused, most traffic first.
    std::vector<SourceKey> heavy_keys;
    for (const HeavyHitter &h : heavy_hitters())
        heavy_keys.push_back(key_of(h.flow.family, h.flow.src,
                                    h.flow.family == 4 ? rule.key_ipv4_len : rule.key_ipv6_len));
    ASSERT_EQ(r.refused_by_key.size(), heavy_keys.size());
    for (size_t h = 0; h < heavy_keys.size(); ++h) {
        ASSERT_GT(refused_for(r, heavy_keys[h]), 0u);
        if (h > 0) {
            ASSERT_GT(refused_for(r, heavy_keys[h - 1]), refused_for(r, heavy_keys[h]));
        }
    }
    EXPECT_GE(c.packets, kSpoofedSources);

    // The pipeline's: the table kept up by reclaiming, and names the three, most first.
    const json &table = stats_.at("table");
    EXPECT_GT(u64(table, "reclaims"), 0u);
    EXPECT_EQ(u64(table, "full_events"), 0u);
    const json &top = stats_.at("rules").at(0).at("top_refused");
    ASSERT_EQ(top.size(), heavy_keys.size());
    for (size_t h = 0; h < heavy_keys.size(); ++h) {
        const std::string text = top.at(h).value("source", "");
        std::string why;
        const std::optional<Prefix> p = parse_prefix(text, &why);
        ASSERT_TRUE(p.has_value()) << text << ": " << why;
        EXPECT_EQ((SourceKey{p->family, p->addr}), heavy_keys[h]) << "top_refused[" << h << "]";
        EXPECT_EQ(u64(top.at(h), "count"), refused_for(r, heavy_keys[h]));
    }
}

// ---------------------------------------------------------------------------------------------
// (g) Determinism: the same inputs give the same bytes out.

TEST_F(Scenario, ReplayTwiceGivesIdenticalOutput) {
    ASSERT_NO_FATAL_FAILURE(write_text("rules.yaml", kRulesMixed));
    ASSERT_NO_FATAL_FAILURE(
        write_trace(mixed_traffic().generator(PcapPrecision::nano), PcapPrecision::nano));
    ASSERT_NO_FATAL_FAILURE(replay("_1"));
    ASSERT_NO_FATAL_FAILURE(replay("_2"));
    for (const char *name : {"pass", "drop"}) {
        const std::string first = read_file(path(std::string(name) + "_1.pcap"));
        EXPECT_GT(first.size(), 24u) << name << " holds no frames";
        EXPECT_TRUE(first == read_file(path(std::string(name) + "_2.pcap"))) << name << " differs";
    }
    const std::string stats = read_file(path("stats_1.json"));
    EXPECT_FALSE(stats.empty());
    EXPECT_EQ(stats, read_file(path("stats_2.json")));
}

// ---------------------------------------------------------------------------------------------
// (h) A bad config file: non-zero exit, and stderr names the file and the line.

struct BadConfig {
    const char *file;
    const char *text;
    int line;
};

const BadConfig kBadConfigs[] = {
    {"zero_burst.yaml", R"(# line 1
# line 2
# line 3
# line 4
# line 5
# line 6
# line 7
# line 8
# line 9
# line 10
rules:
  - name: dns
    match: { proto: udp, dst_port: 53 }
    limit: { rate: 10/s, burst: 0 }
)",
     14},
    {"unknown_field.yaml", R"(rules:
  - name: dns
    match: { proto: udp, dst_port: 53 }
    limit: { rate: 10/s, burst: 5 }
  - name: web
    match: { proto: tcp, dst_port: 443 }
    limit: { rate: 10/s, burst: 5 }

    colour: red
)",
     9},
    {"duplicate_name.yaml", R"(block: [198.19.0.0/16]
rules:
  - name: dns
    limit: { rate: 10/s, burst: 5 }
  - name: other
    limit: { rate: 10/s, burst: 5 }
# the next rule reuses a name



  - name: dns
    limit: { rate: 1/s, burst: 1 }
)",
     11},
};

// True when text holds n as a whole number, not as part of a longer one.
bool has_number(const std::string &text, int n) {
    const std::string digits = std::to_string(n);
    const auto is_digit = [&](size_t at) {
        return at < text.size() && std::isdigit(static_cast<unsigned char>(text[at])) != 0;
    };
    for (size_t at = text.find(digits); at != std::string::npos; at = text.find(digits, at + 1))
        if ((at == 0 || !is_digit(at - 1)) && !is_digit(at + digits.size())) return true;
    return false;
}

TEST_F(Scenario, BadConfigIsRefusedWithFileAndLine) {
    ASSERT_FALSE(floodgate_bin().empty()) << "set FLOODGATE_BIN to the floodgate binary";
    Traffic t;
    t.every(kStartNs, ms(1), 3, flow4("198.18.0.1", kProtoUdp, 53));
    ASSERT_NO_FATAL_FAILURE(write_trace(t.generator(PcapPrecision::micro), PcapPrecision::micro));
    for (const BadConfig &bad : kBadConfigs) {
        SCOPED_TRACE(bad.file);
        ASSERT_NO_FATAL_FAILURE(write_text(bad.file, bad.text));
        const ProcessResult r = run_replay(bad.file, "");
        EXPECT_NE(r.exit_code, 0) << "stderr:\n" << r.err;
        // Drop the directory part: its random name may hold digits.
        std::string err = r.err;
        const std::string dir = dir_.string();
        for (size_t at; (at = err.find(dir)) != std::string::npos;) err.erase(at, dir.size());
        EXPECT_NE(err.find(bad.file), std::string::npos) << "stderr:\n" << r.err;
        EXPECT_TRUE(has_number(err, bad.line)) << "line " << bad.line << " not named; stderr:\n"
                                               << r.err;
    }
}

// ---------------------------------------------------------------------------------------------
// The pcap reader and writer the scenarios rely on.

class PcapIo : public Scenario {};

TEST_F(PcapIo, RoundTripsBothPrecisions) {
    const Frame a = PacketBuilder().ipv4("198.18.0.1", "198.18.0.2").udp(1, 2).build();
    const Frame b = PacketBuilder().eth(kEtherTypeArp).payload(28).build();
    for (const PcapPrecision precision : {PcapPrecision::micro, PcapPrecision::nano}) {
        {
            PcapWriter w(path("rt.pcap"), precision);
            w.write(kStartNs + 123'456'789, a);
            w.write(kStartNs + sec(2) + 5, b);
            w.close();
        }
        const PcapFile f = read_pcap(path("rt.pcap"));
        EXPECT_EQ(f.precision, precision);
        EXPECT_EQ(f.linktype, kLinktypeEthernet);
        ASSERT_EQ(f.records.size(), 2u);
        const bool nano = precision == PcapPrecision::nano;
        EXPECT_EQ(f.records[0].ts_ns, kStartNs + (nano ? 123'456'789 : 123'456'000));
        EXPECT_EQ(f.records[1].ts_ns, kStartNs + sec(2) + (nano ? 5 : 0));
        EXPECT_EQ(f.records[0].bytes, a);
        EXPECT_EQ(f.records[1].bytes, b);
    }
}

TEST_F(PcapIo, ReadsTheOtherByteOrder) {
    // A big-endian nanosecond file: header, then one 3-byte record at 1 s + 7 ns.
    const std::vector<uint8_t> file = {
        0xa1, 0xb2, 0x3c, 0x4d, 0, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0,  // magic, 2.4, zone, sigfigs
        0,    0,    0xff, 0xff, 0, 0, 0, 1,                          // snaplen, linktype 1
        0,    0,    0,    1,    0, 0, 0, 7, 0, 0, 0, 3, 0, 0, 0, 3,  // record header
        0xaa, 0xbb, 0xcc};
    write_text("be.pcap", std::string(file.begin(), file.end()));
    PcapReader r(path("be.pcap"));
    EXPECT_EQ(r.precision(), PcapPrecision::nano);
    EXPECT_EQ(r.linktype(), kLinktypeEthernet);
    EXPECT_EQ(r.snaplen(), 65535u);
    PcapRecord rec;
    ASSERT_TRUE(r.next(&rec));
    EXPECT_EQ(rec.ts_ns, kNsPerSec + 7);
    EXPECT_EQ(rec.bytes, (std::vector<uint8_t>{0xaa, 0xbb, 0xcc}));
    EXPECT_FALSE(r.next(&rec));
}

TEST_F(PcapIo, CutRecordThrows) {
    {
        PcapWriter w(path("cut.pcap"), PcapPrecision::micro);
        w.write(kStartNs, PacketBuilder().ipv4("198.18.0.1", "198.18.0.2").udp(1, 2).build());
    }
    const std::string whole = read_file(path("cut.pcap"));
    write_text("cut.pcap", whole.substr(0, whole.size() - 1));
    PcapReader r(path("cut.pcap"));
    PcapRecord rec;
    EXPECT_THROW(r.next(&rec), std::runtime_error);
    write_text("bad.pcap", "this is not a pcap file at all");
    EXPECT_THROW(PcapReader{path("bad.pcap")}, std::runtime_error);
}

}  // namespace
}  // namespace floodgate::test
