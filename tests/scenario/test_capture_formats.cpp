// One capture in the formats `floodgate replay` reads (libpcap's: dataplane/replay/pcap_file.h)
// replays the same: floodgate-gen's demo (nanosecond pcap) and syn-flood (microsecond pcap),
// each converted by tshark to pcapng, and the syn-flood to a nanosecond pcap. Under one rules
// file every run of a capture gives the same verdicts, stats and summary, and the same output
// pcaps byte for byte where their timestamps have the same unit. pcapng is replayed into
// nanosecond pcaps, so a microsecond pcap's outputs are compared once tshark has converted
// them to nanoseconds. Skipped without tshark.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/scenario/harness.h"

namespace floodgate::test {
namespace {

std::string find_in_path(const std::string &name) {
    const char *p = std::getenv("PATH");
    std::stringstream dirs(p != nullptr ? p : "/usr/bin:/bin");
    for (std::string d; std::getline(dirs, d, ':');) {
        const std::string full = d + "/" + name;
        if (!d.empty() && access(full.c_str(), X_OK) == 0) return full;
    }
    return "";
}

// Rate limits with answers, so that every output has frames: the demo's DNS flood and SYN
// flood are refused, the SYNs answered with RSTs (and, in the syn-flood, capped).
constexpr const char *kRules = R"(rules:
  - name: dns
    match: { proto: udp, dst_port: 53 }
    limit: { rate: 100/s, burst: 50 }
    action: dns-truncate
    slip: 2
  - name: syn
    match: { tcp_flags: "syn !ack" }
    key: { ipv4: 16, ipv6: 48 }
    limit: { rate: 1000/s, burst: 100 }
    action: tcp-rst
)";

const std::vector<std::string> kOutputs = {"pass.pcap", "drop.pcap", "answers.pcap", "stats.json",
                                           "stdout.txt"};

class CaptureFormats : public Scenario {
  protected:
    void SetUp() override {
        Scenario::SetUp();
        tshark_ = find_in_path("tshark");
        const char *gen = std::getenv("FLOODGATE_GEN_BIN");
        gen_ = gen != nullptr ? gen : "";
    }

    void run_ok(const std::vector<std::string> &argv) {
        const ProcessResult r = run_process(argv, dir_);
        ASSERT_EQ(r.exit_code, 0) << argv[0] << " " << argv[1] << " failed; stderr:\n" << r.err;
    }

    // tshark -r IN -F FORMAT -w OUT
    void convert(const std::string &in, const std::string &format, const std::string &out) {
        run_ok({tshark_, "-r", path(in), "-F", format, "-w", path(out)});
    }

    // Replays IN into IN.pass.pcap, IN.drop.pcap, IN.answers.pcap, IN.stats.json and its
    // summary into IN.stdout.txt.
    void replay_capture(const std::string &in) {
        run_ok({floodgate_bin(), "replay", "--config", path("rules.yaml"), "--in", path(in),
                "--pass", path(in + ".pass.pcap"), "--drop", path(in + ".drop.pcap"), "--answers",
                path(in + ".answers.pcap"), "--stats", path(in + ".stats.json")});
        write_text(in + ".stdout.txt", read_file(path("stdout.txt")));
    }

    std::string magic(const std::string &name) { return read_file(path(name)).substr(0, 4); }

    ::testing::AssertionResult same_file(const std::string &a, const std::string &b) {
        const std::string x = read_file(path(a)), y = read_file(path(b));
        if (x == y) return ::testing::AssertionSuccess();
        size_t at = 0;
        while (at < x.size() && at < y.size() && x[at] == y[at]) ++at;
        return ::testing::AssertionFailure() << a << " (" << x.size() << " bytes) and " << b << " ("
                                             << y.size() << " bytes) differ at byte " << at;
    }

    std::string tshark_, gen_;
};

const std::string kPcapngMagic("\x0a\x0d\x0d\x0a", 4);
const std::string kMicroMagic("\xd4\xc3\xb2\xa1", 4);  // as the host (little-endian) writes it
const std::string kNanoMagic("\x4d\x3c\xb2\xa1", 4);

TEST_F(CaptureFormats, PcapngAndNanosecondPcapReplayAsTheClassicPcap) {
    if (tshark_.empty()) GTEST_SKIP() << "tshark is not installed (apt-get install tshark)";
    ASSERT_FALSE(floodgate_bin().empty()) << "set FLOODGATE_BIN to the floodgate binary";
    ASSERT_FALSE(gen_.empty()) << "set FLOODGATE_GEN_BIN to the floodgate-gen binary";
    write_text("rules.yaml", kRules);
    ASSERT_NO_FATAL_FAILURE(run_ok({gen_, "demo", "--out", path("demo.pcap")}));
    ASSERT_NO_FATAL_FAILURE(run_ok({gen_, "syn-flood", "--out", path("syn.pcap")}));
    ASSERT_NO_FATAL_FAILURE(convert("demo.pcap", "pcapng", "demo.pcapng"));
    ASSERT_NO_FATAL_FAILURE(convert("syn.pcap", "pcapng", "syn.pcapng"));
    ASSERT_NO_FATAL_FAILURE(convert("syn.pcap", "nsecpcap", "syn-ns.pcap"));
    EXPECT_EQ(magic("demo.pcap"), kNanoMagic);
    EXPECT_EQ(magic("syn.pcap"), kMicroMagic);
    EXPECT_EQ(magic("demo.pcapng"), kPcapngMagic);
    EXPECT_EQ(magic("syn.pcapng"), kPcapngMagic);
    EXPECT_EQ(magic("syn-ns.pcap"), kNanoMagic);

    for (const char *in : {"demo.pcap", "demo.pcapng", "syn.pcap", "syn.pcapng", "syn-ns.pcap"}) {
        SCOPED_TRACE(in);
        ASSERT_NO_FATAL_FAILURE(replay_capture(in));
    }

    // Not vacuous: frames passed, dropped and answered in both captures.
    for (const char *in : {"demo.pcap", "syn.pcap"}) {
        SCOPED_TRACE(in);
        const nlohmann::json stats =
            nlohmann::json::parse(read_file(path(in + std::string(".stats.json"))));
        EXPECT_GT(stats.value("passed", 0u), 0u);
        EXPECT_GT(stats.value("dropped", 0u), 0u);
        EXPECT_GT(stats.value("answered", 0u), 0u);
    }
    // Outputs keep the input's unit: nanoseconds from pcapng.
    EXPECT_EQ(magic("demo.pcapng.pass.pcap"), kNanoMagic);
    EXPECT_EQ(magic("syn.pcap.pass.pcap"), kMicroMagic);
    EXPECT_EQ(magic("syn.pcapng.pass.pcap"), kNanoMagic);

    // The same capture in the same unit: every output byte for byte.
    for (const auto &[a, b] : std::vector<std::pair<std::string, std::string>>{
             {"demo.pcap", "demo.pcapng"}, {"syn-ns.pcap", "syn.pcapng"}}) {
        for (const std::string &out : kOutputs)
            EXPECT_TRUE(same_file(a + "." + out, b + "." + out));
    }
    // The microsecond pcap: the same stats and summary, and outputs that are the pcapng's once
    // in nanoseconds.
    EXPECT_TRUE(same_file("syn.pcap.stats.json", "syn.pcapng.stats.json"));
    EXPECT_TRUE(same_file("syn.pcap.stdout.txt", "syn.pcapng.stdout.txt"));
    for (const char *out : {"pass", "drop", "answers"}) {
        const std::string micro = std::string("syn.pcap.") + out + ".pcap";
        ASSERT_NO_FATAL_FAILURE(convert(micro, "nsecpcap", micro + ".ns"));
        EXPECT_TRUE(same_file(micro + ".ns", std::string("syn.pcapng.") + out + ".pcap"));
    }
}

}  // namespace
}  // namespace floodgate::test
