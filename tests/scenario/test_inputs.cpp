// Scenarios on what replay reads and writes: every kind of frame (malformed, non-IP, tagged,
// fragments) with allow and block prefixes, the same trace twice, bad rules files, outputs that
// are one file, and the pcap reader and writer the harness relies on.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/pcap_io.h"
#include "tests/pkt_builder.h"
#include "tests/scenario/harness.h"
#include "tests/scenario/traffic.h"

namespace floodgate::test {
namespace {

// ---------------------------------------------------------------------------------------------
// Malformed and non-IP frames, VLAN and QinQ tags, allow and block prefixes, fragments,
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
// Determinism: the same inputs give the same bytes out.

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
// A bad config file: non-zero exit, and stderr names the file and the line.

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
// Outputs that are one file: --pass, --drop and --stats must each be a file of their own and
// none of them the input, however they are spelled (same name, hard link, symlink, "./"), or
// the outputs would interleave into a corrupt capture, or the input would be emptied before it
// is read. Refused as a usage error (2) that names both options, before anything is truncated.

class SameFile : public Scenario {
  protected:
    void SetUp() override {
        ASSERT_NO_FATAL_FAILURE(Scenario::SetUp());
        ASSERT_FALSE(floodgate_bin().empty()) << "set FLOODGATE_BIN to the floodgate binary";
        ASSERT_NO_FATAL_FAILURE(write_text(
            "rules.yaml", "rules:\n  - name: all\n    limit: { rate: 10/s, burst: 5 }\n"));
        Traffic t;
        t.every(kStartNs, ms(1), 20, flow4("198.18.0.1", kProtoUdp, 53));
        ASSERT_NO_FATAL_FAILURE(
            write_trace(t.generator(PcapPrecision::micro), PcapPrecision::micro));
        trace_ = read_file(path("trace.pcap"));
    }

    ProcessResult replay_with(const std::vector<std::string> &outputs) {
        std::vector<std::string> argv = {floodgate_bin(),    "replay", "--config",
                                         path("rules.yaml"), "--in",   path("trace.pcap"),
                                         "--quiet"};
        argv.insert(argv.end(), outputs.begin(), outputs.end());
        return run_process(argv, dir_);
    }

    // The command is refused as naming one file twice, with both options in the message.
    void expect_refused(const std::vector<std::string> &outputs, const char *option_a,
                        const char *option_b) {
        const ProcessResult r = replay_with(outputs);
        EXPECT_EQ(r.exit_code, 2) << "stderr:\n" << r.err;
        EXPECT_NE(r.err.find(option_a), std::string::npos) << r.err;
        EXPECT_NE(r.err.find(option_b), std::string::npos) << r.err;
        EXPECT_NE(r.err.find("same file"), std::string::npos) << r.err;
        EXPECT_TRUE(read_file(path("trace.pcap")) == trace_) << "the input was changed";
    }

    void link_to(const std::string &target, const std::string &name, bool symbolic) {
        std::error_code ec;
        if (symbolic)
            std::filesystem::create_symlink(target, path(name), ec);
        else
            std::filesystem::create_hard_link(path(target), path(name), ec);
        ASSERT_FALSE(ec) << name << ": " << ec.message();
    }

    std::string trace_;  // the input's bytes before the run
};

TEST_F(SameFile, OneNameForTwoOutputsIsRefused) {
    const std::pair<const char *, const char *> pairs[] = {{"--pass", "--drop"},
                                                           {"--pass", "--stats"},
                                                           {"--drop", "--stats"},
                                                           {"--pass", "--report"},
                                                           {"--stats", "--report"}};
    for (const auto &[a, b] : pairs) {
        SCOPED_TRACE(std::string(a) + " and " + b);
        std::vector<std::string> outputs = {a, path("out.pcap"), b, path("out.pcap")};
        if (std::string(a) != "--pass") outputs.insert(outputs.end(), {"--pass", path("p.pcap")});
        // Neither exists yet: the first is created, and the second found to be it.
        expect_refused(outputs, a, b);
        EXPECT_FALSE(std::filesystem::exists(path("out.pcap"))) << "a refused run left a file";
        // An existing file is not truncated either.
        ASSERT_NO_FATAL_FAILURE(write_text("out.pcap", "keep me"));
        expect_refused(outputs, a, b);
        EXPECT_TRUE(read_file(path("out.pcap")) == "keep me") << "out.pcap was rewritten";
        std::filesystem::remove(path("out.pcap"));
    }
}

TEST_F(SameFile, HardLinkIsTheSameFile) {
    ASSERT_NO_FATAL_FAILURE(write_text("a.pcap", "keep me"));
    ASSERT_NO_FATAL_FAILURE(link_to("a.pcap", "b.pcap", false));
    expect_refused({"--pass", path("a.pcap"), "--drop", path("b.pcap")}, "--pass", "--drop");
    EXPECT_TRUE(read_file(path("a.pcap")) == "keep me") << "a.pcap was rewritten";
}

TEST_F(SameFile, SymlinkIsTheSameFile) {
    // A symlink to an output that does not exist yet, and one to an existing file.
    ASSERT_NO_FATAL_FAILURE(link_to(path("a.pcap"), "to-a.pcap", true));
    expect_refused({"--pass", path("a.pcap"), "--drop", path("to-a.pcap")}, "--pass", "--drop");
    EXPECT_FALSE(std::filesystem::exists(path("a.pcap"))) << "a refused run left a file";
    ASSERT_NO_FATAL_FAILURE(write_text("a.pcap", "keep me"));
    expect_refused({"--pass", path("to-a.pcap"), "--stats", path("a.pcap")}, "--pass", "--stats");
    EXPECT_TRUE(read_file(path("a.pcap")) == "keep me") << "a.pcap was rewritten";
}

TEST_F(SameFile, OtherSpellingsOfOnePathAreTheSameFile) {
    std::filesystem::create_directory(path("sub"));
    expect_refused({"--pass", path("x.pcap"), "--drop", (dir_ / "." / "x.pcap").string()}, "--pass",
                   "--drop");
    expect_refused({"--pass", path("x.pcap"), "--stats", (dir_ / "sub" / ".." / "x.pcap").string()},
                   "--pass", "--stats");
}

TEST_F(SameFile, TheInputIsNeverAnOutputAndIsLeftAsItWas) {
    ASSERT_NO_FATAL_FAILURE(link_to("trace.pcap", "hard.pcap", false));
    ASSERT_NO_FATAL_FAILURE(link_to(path("trace.pcap"), "sym.pcap", true));
    const std::string dot = (dir_ / "." / "trace.pcap").string();
    expect_refused({"--pass", path("trace.pcap")}, "--in", "--pass");
    expect_refused({"--pass", path("p.pcap"), "--drop", dot}, "--in", "--drop");
    expect_refused({"--pass", path("p.pcap"), "--stats", path("sym.pcap")}, "--in", "--stats");
    expect_refused({"--pass", path("hard.pcap")}, "--in", "--pass");
}

// --report is written by name at the end, like --stats: a directory there fails the run (1),
// before anything is replayed, and leaves the other outputs unwritten. The capture is read
// twice for its bins, so a pipe as --in is refused.
TEST_F(SameFile, ReportToADirectoryOrFromAPipeFails) {
    std::filesystem::create_directory(path("dir"));
    ProcessResult r = replay_with({"--pass", path("p.pcap"), "--report", path("dir")});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("--report"), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(path("p.pcap"))) << "a failed run left --pass";
    // The trace through a FIFO, written once replay has opened it (a non-blocking open for
    // writing fails with ENXIO until a reader is there); given up after 10 s.
    ASSERT_EQ(mkfifo(path("fifo").c_str(), 0600), 0) << std::strerror(errno);
    std::thread writer([&] {
        int fd = -1;
        for (int tries = 0; fd < 0 && tries < 1000; ++tries) {
            fd = ::open(path("fifo").c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
            if (fd < 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        if (fd < 0) return;
        [[maybe_unused]] ssize_t n = ::write(fd, trace_.data(), trace_.size());  // < PIPE_BUF x 16
        ::close(fd);
    });
    r = run_process({floodgate_bin(), "replay", "--config", path("rules.yaml"), "--in",
                     path("fifo"), "--pass", path("p.pcap"), "--report", path("r.html")},
                    dir_);
    writer.join();
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("regular file"), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(path("r.html"))) << "a failed run left --report";
}

TEST_F(SameFile, DevNullMayBeNamedTwice) {
    // Writing twice to a character device corrupts no file: discarding outputs is allowed.
    const ProcessResult r =
        replay_with({"--pass", "/dev/null", "--drop", "/dev/null", "--stats", "/dev/null"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    struct stat st {};
    ASSERT_EQ(stat("/dev/null", &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode)) << "--stats replaced /dev/null";
}

TEST_F(SameFile, StatsThroughALinkKeepTheLink) {
    // --stats replaces a regular file whole, and writes through anything else as it is.
    { std::ofstream(path("target.json")) << "old"; }
    std::filesystem::create_symlink(path("target.json"), path("link.json"));
    const ProcessResult r = replay_with({"--pass", path("p.pcap"), "--stats", path("link.json")});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(std::filesystem::is_symlink(path("link.json")));
    EXPECT_GT(std::filesystem::file_size(path("target.json")), 3u);
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

// ---------------------------------------------------------------------------------------------
// Hostile traces: `floodgate replay` exits 1 with a message that says what is wrong and where,
// and no length a file claims is allocated before it is checked. Files are read with libpcap
// (1.10: sf-pcap.c, sf-pcapng.c), whose messages these are, after the record's number; a
// record longer than its snap length, which libpcap cuts and reads on from, is refused by
// dataplane/replay/pcap_file.h.

constexpr const char *kRulesOneLimit =
    "rules:\n  - name: all\n    limit: { rate: 1000/s, burst: 1000 }\n";

void put32(std::string *out, uint32_t v) {
    for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>(v >> (8 * i) & 0xff));
}

// A little-endian microsecond pcap file header.
std::string pcap_header(uint32_t snaplen) {
    std::string h;
    put32(&h, 0xa1b2c3d4);
    put32(&h, 2 | 4u << 16);  // version 2.4
    put32(&h, 0);             // thiszone
    put32(&h, 0);             // sigfigs
    put32(&h, snaplen);
    put32(&h, 1);  // Ethernet
    return h;
}

// A record header claiming incl_len captured bytes, followed by the bytes actually given.
std::string pcap_record(uint32_t incl_len, const Frame &bytes, uint32_t ts_sec = 1700000000) {
    std::string r;
    put32(&r, ts_sec);
    put32(&r, 0);
    put32(&r, incl_len);
    put32(&r, incl_len);
    r.append(bytes.begin(), bytes.end());
    return r;
}

// A little-endian pcapng file's Section Header Block and one Ethernet interface (microsecond
// timestamps), then an Enhanced Packet Block holding bytes as caplen, with ts_high:ts_low.
std::string pcapng_header(uint32_t snaplen) {
    std::string h;
    for (uint32_t word : {0x0a0d0d0au, 28u, 0x1a2b3c4du, 1u, 0xffffffffu, 0xffffffffu, 28u})
        put32(&h, word);
    for (uint32_t word : {1u, 20u, 1u /* Ethernet, reserved 0 */, snaplen, 20u}) put32(&h, word);
    return h;
}

std::string pcapng_packet(const Frame &bytes, uint32_t ts_high = 395812, uint32_t ts_low = 0) {
    const uint32_t padded = static_cast<uint32_t>(bytes.size() + 3) / 4 * 4;
    const uint32_t caplen = static_cast<uint32_t>(bytes.size());
    std::string b;
    for (uint32_t word : {6u, 32 + padded, 0u, ts_high, ts_low, caplen, caplen}) put32(&b, word);
    b.append(bytes.begin(), bytes.end());
    b.append(padded - bytes.size(), '\0');
    put32(&b, 32 + padded);
    return b;
}

Frame udp_frame(size_t payload = 18) {
    return PacketBuilder().ipv4("198.18.0.1", "198.18.1.1").udp(1234, 53).payload(payload).build();
}

struct BadTrace {
    const char *what;
    std::string bytes;
    const char *message;  // what stderr must say, after "floodgate replay: .../trace.pcap: "
};

TEST_F(Scenario, HostileTracesAreRefusedWithTheRecordAndWhy) {
    ASSERT_FALSE(floodgate_bin().empty()) << "set FLOODGATE_BIN to the floodgate binary";
    ASSERT_NO_FATAL_FAILURE(write_text("rules.yaml", kRulesOneLimit));
    const Frame f = udp_frame();  // 60 bytes
    ASSERT_EQ(f.size(), 60u);
    const std::string ok = pcap_header(65535) + pcap_record(60, f);
    std::string pcapng;  // a Section Header Block: type, length, byte-order magic, version 1.0
    for (uint32_t word : {0x0a0d0d0au, 28u, 0x1a2b3c4du, 1u, 0xffffffffu, 0xffffffffu, 28u})
        put32(&pcapng, word);
    const std::vector<BadTrace> bad = {
        {"pcapng without an interface", pcapng,
         "the capture file has no Interface Description Blocks"},
        {"not a capture", "this is not a pcap file at all", "unknown file format"},
        {"file header cut short", pcap_header(65535).substr(0, 20),
         "truncated dump file; tried to read 24 file header bytes, only got 16"},
        {"empty file", "", "truncated dump file; tried to read 4 file header bytes, only got 0"},
        {"record header cut short", ok + pcap_record(60, f).substr(0, 10),
         "record 2: truncated dump file; tried to read 16 header bytes, only got 10"},
        {"record data cut short", ok + pcap_record(60, Frame(f.begin(), f.begin() + 55)),
         "record 2: truncated dump file; tried to read 60 captured bytes, only got 55"},
        {"record longer than its snap length",
         pcap_header(64) + pcap_record(60, f) + pcap_record(100, udp_frame(58)),
         "record 2: captured length 100 is longer than the file's snap length 64"},
        // 2 GiB claimed and 60 bytes there: refused from the header, nothing allocated.
        {"record of 2^31 bytes", pcap_header(1u << 31) + pcap_record(1u << 31, f),
         "record 1: invalid packet capture length 2147483648, bigger than snaplen of 262144"},
        // Within a snap length past the maximum, but past the maximum itself.
        {"record of 300000 bytes", pcap_header(1000000) + pcap_record(300000, Frame(300000)),
         "record 1: invalid packet capture length 300000, bigger than maximum of 262144"},
        // pcapng: libpcap reads an interface's snap length up to INT_MAX as it is, and its
        // blocks up to 16 MiB; replay refuses what is past 262144 all the same.
        {"pcapng record of 300000 bytes",
         pcapng_header(1000000) + pcapng_packet(f) + pcapng_packet(Frame(300000)),
         "record 2: captured length 300000 is longer than the file's snap length 262144"},
        {"pcapng block cut short", pcapng_header(65535) + pcapng_packet(f).substr(0, 50),
         "record 1: truncated pcapng dump file; tried to read 84 bytes, only got 42"},
        // 2^52 microseconds: 4503599627 s, past the 32 bits of a pcap file's seconds.
        {"pcapng timestamp past 2106", pcapng_header(65535) + pcapng_packet(f, 1u << 20, 0),
         "record 1: timestamp 4503599627 s is past what a pcap file holds (2^32 - 1 s)"},
    };
    for (const BadTrace &t : bad) {
        SCOPED_TRACE(t.what);
        ASSERT_NO_FATAL_FAILURE(write_text("trace.pcap", t.bytes));
        const ProcessResult r = run_replay("rules.yaml", "");
        EXPECT_EQ(r.exit_code, 1) << "stderr:\n" << r.err;
        EXPECT_NE(r.err.find("floodgate replay: " + path("trace.pcap") + ": " + t.message),
                  std::string::npos)
            << "stderr:\n"
            << r.err;
    }
}

// A snap length of 0 or past libpcap's maximum (262144) stands for the maximum: libpcap reads
// 0 and anything past INT_MAX so, and replay the rest (1000000 here). The trace replays, and
// the outputs carry the maximum.
TEST_F(Scenario, SnapLengthOfZeroOrTwoToThe31IsReadAsTheMaximum) {
    ASSERT_FALSE(floodgate_bin().empty()) << "set FLOODGATE_BIN to the floodgate binary";
    ASSERT_NO_FATAL_FAILURE(write_text("rules.yaml", kRulesOneLimit));
    const Frame f = udp_frame();
    for (const uint32_t snaplen : {0u, 1000000u, 1u << 31, 0xffffffffu}) {
        SCOPED_TRACE(snaplen);
        ASSERT_NO_FATAL_FAILURE(write_text("trace.pcap", pcap_header(snaplen) + pcap_record(60, f) +
                                                             pcap_record(60, f, 1700000001)));
        const ProcessResult r = run_replay("rules.yaml", "");
        ASSERT_EQ(r.exit_code, 0) << "stderr:\n" << r.err;
        EXPECT_EQ(PcapReader(path("pass.pcap")).snaplen(), 262144u);
        const PcapFile out = read_pcap(path("pass.pcap"));
        ASSERT_EQ(out.records.size(), 2u);
        EXPECT_EQ(out.records[0].bytes, f);
    }
}

}  // namespace
}  // namespace floodgate::test
