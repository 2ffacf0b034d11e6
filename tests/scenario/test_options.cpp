// Every command's numeric options, as processes: each loosely written value is refused with
// exit code 2 (usage) and a message that names the option, states the accepted range and
// quotes the value, before the command does anything else.
//
// The commands are run so that a value wrongly accepted ends them quickly with another exit
// code instead of running on: `floodgate run` and floodgate-tx are given a rules file or pcap
// that does not exist (read only after the options), floodctl a socket with no daemon behind
// it and, for `floodctl daemon`, a missing rules file (read before it binds anything).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "tests/scenario/harness.h"
#include "tests/scenario/traffic.h"

namespace floodgate::test {
namespace {

struct BadValue {
    const char *option;
    const char *value;
    const char *range;  // how the refusal must state the accepted values
};

class Options : public Scenario {
  protected:
    // A binary of the same build: $env when set (meson sets it), else where the build tree
    // puts it, beside FLOODGATE_BIN (BUILD/dataplane/floodgate).
    static std::string build_bin(const char *env, const char *in_build) {
        const char *set = std::getenv(env);
        if (set != nullptr && *set != 0) return set;
        return (std::filesystem::path(floodgate_bin()).parent_path().parent_path() / in_build)
            .string();
    }

    // EAL options for a process that must not need hugepages, devices or a shared runtime
    // directory; a file prefix of its own so that runs never share DPDK state.
    std::vector<std::string> eal_args() {
        return {"--no-huge",
                "--no-pci",
                "--no-shconf",
                "-m",
                "64",
                "--file-prefix=fgopt" + std::to_string(getpid()) + "_" + std::to_string(++runs_),
                "--vdev=net_null0",
                "--log-level=error",
                "--"};
    }

    // Runs argv followed by the bad option and its value; checks the refusal.
    void expect_refused(std::vector<std::string> argv, const BadValue &bad) {
        SCOPED_TRACE(std::string(bad.option) + " '" + bad.value + "'");
        argv.push_back(bad.option);
        argv.push_back(bad.value);
        const ProcessResult r = run_process(argv, dir_);
        EXPECT_EQ(r.exit_code, 2) << "stderr:\n" << r.err;
        EXPECT_NE(r.err.find(std::string(bad.option) + " "), std::string::npos) << r.err;
        EXPECT_NE(r.err.find(bad.range), std::string::npos) << r.err;
        EXPECT_NE(r.err.find(std::string("'") + bad.value + "'"), std::string::npos) << r.err;
    }

    unsigned runs_ = 0;
};

// ---------------------------------------------------------------------------------------------
// floodgate replay

const BadValue kReplayBad[] = {
    {"--workers", "-5", "from 1 to 64"},
    {"--workers", " 5", "from 1 to 64"},  // strtoul skipped the space: 5 workers
    {"--workers", "5x", "from 1 to 64"},
    {"--workers", "0x10", "from 1 to 64"},
    {"--workers", "0", "from 1 to 64"},
    {"--workers", "65", "from 1 to 64"},
    {"--workers", "", "from 1 to 64"},
    {"--merge-interval-us", "-5", "from 1 to 10000000"},  // strtoull: 2^64 - 5, times 1000
    {"--merge-interval-us", " 1000", "from 1 to 10000000"},
    {"--merge-interval-us", "1000x", "from 1 to 10000000"},
    {"--merge-interval-us", "1e3", "from 1 to 10000000"},
    {"--merge-interval-us", "0", "from 1 to 10000000"},
    {"--merge-interval-us", "18446744073709552", "from 1 to 10000000"},  // x 1000 wraps
    {"--spread", "round-robin", "steering, hash or rr"},
    {"--spread", "", "steering, hash or rr"},
    {"--boxes", "0", "from 1 to 64"},
    {"--boxes", "65", "from 1 to 64"},
    {"--sync-ms", "5", "from 10 to 10000"},
    {"--sync-ms", "100ms", "from 10 to 10000"},
    {"--store-down", "5", "is not FROM-TO"},
    {"--store-down", "10-5", "5"},
    {"--store-down", "a-5", "a"},
};

TEST_F(Options, ReplayRefusesLooseNumbers) {
    ASSERT_FALSE(floodgate_bin().empty()) << "set FLOODGATE_BIN to the floodgate binary";
    ASSERT_NO_FATAL_FAILURE(
        write_text("rules.yaml", "rules:\n  - name: all\n    limit: { rate: 10/s, burst: 5 }\n"));
    Traffic t;
    t.every(kStartNs, ms(1), 3, flow4("198.18.0.1", kProtoUdp, 53));
    ASSERT_NO_FATAL_FAILURE(write_trace(t.generator(PcapPrecision::micro), PcapPrecision::micro));
    for (const BadValue &bad : kReplayBad)
        expect_refused({floodgate_bin(), "replay", "--config", path("rules.yaml"), "--in",
                        path("trace.pcap"), "--pass", path("pass.pcap"), "--quiet"},
                       bad);
}

// ---------------------------------------------------------------------------------------------
// floodgate run: the EAL starts first, then the options are read; a refusal must come before
// any worker starts (the "floodgate: N workers" line).

const BadValue kRunBad[] = {
    {"--outside", "1x", "from 0 to "},  // std::stoi: port 1
    {"--outside", "-1", "from 0 to "},
    {"--outside", " 0", "from 0 to "},
    {"--outside", "99999", "from 0 to "},
    {"--inside", "-1", "from 0 to "},  // was the internal "not given"
    {"--inside", "1x", "from 0 to "},
    {"--stats-interval", "-5", "from 0.1 to 86400"},  // std::stod: -5, then never a line
    {"--stats-interval", "1e3", "from 0.1 to 86400"},
    {"--stats-interval", "nan", "from 0.1 to 86400"},
    {"--stats-interval", "inf", "from 0.1 to 86400"},
    {"--stats-interval", "5x", "from 0.1 to 86400"},
    {"--stats-interval", "0", "from 0.1 to 86400"},
    {"--mbufs", "2000x", "from 1024 to 1073741824"},  // std::stoll: 2000
    {"--mbufs", "-2000", "from 1024 to 1073741824"},
    {"--mbufs", "100", "from 1024 to 1073741824"},
    {"--mbuf-size", "-1", "to 65535"},
    {"--mbuf-size", "2176x", "to 65535"},
    {"--merge-interval-us", "5x", "from 1 to 10000000"},
    {"--merge-interval-us", " 5", "from 1 to 10000000"},
    {"--merge-interval-us", "0", "from 1 to 10000000"},
    {"--steering", "rss", "auto, nic, software or none"},
    {"--steering", "", "auto, nic, software or none"},
};

TEST_F(Options, RunRefusesLooseNumbersBeforeStartingWorkers) {
    ASSERT_FALSE(floodgate_bin().empty()) << "set FLOODGATE_BIN to the floodgate binary";
    for (const BadValue &bad : kRunBad) {
        std::vector<std::string> argv = {floodgate_bin(), "run"};
        for (std::string &a : eal_args()) argv.push_back(std::move(a));
        for (const std::string &a : {std::string("--config"), path("absent.yaml"),
                                     std::string("--control"), std::string("none")})
            argv.push_back(a);
        expect_refused(argv, bad);
        EXPECT_EQ(read_file(dir_ / "stdout.txt").find("floodgate: "), std::string::npos)
            << bad.option << " '" << bad.value << "': workers were started";
    }
}

// --steering nic on ports that cannot steer by source (net_null offers RSS, not L3_SRC_ONLY):
// refused once the ports have answered, naming the port and what it lacks, before any worker
// starts (auto steers in software instead: the control test).
TEST_F(Options, RunRefusesNicSteeringThePortsCannotDo) {
    ASSERT_FALSE(floodgate_bin().empty()) << "set FLOODGATE_BIN to the floodgate binary";
    ASSERT_NO_FATAL_FAILURE(write_text("rules.yaml",
                                       "table: { entries_per_core: 1024 }\nrules:\n  - name: all\n"
                                       "    limit: { rate: 10/s, burst: 5 }\n"));
    // Bounded: were nic wrongly accepted, the dataplane would run until stopped.
    std::vector<std::string> argv = {"/usr/bin/timeout",
                                     "--signal=INT",
                                     "30",
                                     floodgate_bin(),
                                     "run",
                                     "--lcores=0@0,1@0,2@0",  // two workers, on any machine
                                     "--no-huge",
                                     "--no-pci",
                                     "--no-shconf",
                                     "-m",
                                     "256",
                                     "--file-prefix=fgopt" + std::to_string(getpid()) + "_nic",
                                     "--vdev=net_null0",
                                     "--vdev=net_null1",
                                     "--log-level=error",
                                     "--",
                                     "--config",
                                     path("rules.yaml"),
                                     "--control",
                                     "none",
                                     "--steering",
                                     "nic"};
    const ProcessResult r = run_process(argv, dir_);
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("--steering nic: port 0 offers no L3_SRC_ONLY hashing"), std::string::npos)
        << r.err;
    EXPECT_EQ(read_file(dir_ / "stdout.txt").find("floodgate: "), std::string::npos)
        << "workers were started";
}

// ---------------------------------------------------------------------------------------------
// floodctl: the command line is read before the daemon is contacted.

const BadValue kTopBad[] = {
    {"-n", "3x", "from 1 to 64"},  // atoi: 3
    {"-n", "-3", "from 1 to 64"}, {"-n", " 3", "from 1 to 64"},  {"-n", "0", "from 1 to 64"},
    {"-n", "65", "from 1 to 64"}, {"-n", "0x3", "from 1 to 64"}, {"-n", "", "from 1 to 64"},
};

const BadValue kTtlBad[] = {
    {"--ttl", "15", "needs a unit (s, m, h, d)"},  // was 15 seconds
    {"--ttl", "-5m", "from 1s to 3660d"},         {"--ttl", "15x", "from 1s to 3660d"},
    {"--ttl", "0s", "from 1s to 3660d"},          {"--ttl", "1.5h", "from 1s to 3660d"},
    {"--ttl", "3661d", "from 1s to 3660d"},
};

const BadValue kMetricsBad[] = {
    // getaddrinfo's numeric service: 4464, 0 (any free port), 80, 80, 0.
    {"--metrics", "127.0.0.1:70000", "from 0 to 65535"},
    {"--metrics", "127.0.0.1:65536", "from 0 to 65535"},
    {"--metrics", "127.0.0.1: 80", "from 0 to 65535"},
    {"--metrics", "127.0.0.1:+80", "from 0 to 65535"},
    {"--metrics", "127.0.0.1:", "from 0 to 65535"},
    {"--metrics", "127.0.0.1:80x", "from 0 to 65535"},
};

TEST_F(Options, FloodctlRefusesLooseNumbersWithoutADaemon) {
    const std::string ctl = build_bin("FLOODCTL_BIN", "control/floodctl");
    const std::vector<std::string> base = {ctl, "--socket", path("no-daemon.sock")};
    for (const BadValue &bad : kTopBad) {
        std::vector<std::string> argv = base;
        argv.push_back("top");
        expect_refused(argv, bad);
    }
    for (const BadValue &bad : kTtlBad)
        for (const char *list : {"block", "allow"}) {
            std::vector<std::string> argv = base;
            for (const char *a : {list, "add", "198.18.0.0/24"}) argv.push_back(a);
            expect_refused(argv, bad);
        }
    for (const BadValue &bad : kMetricsBad) {
        std::vector<std::string> argv = base;
        for (const char *a : {"daemon", "--config"}) argv.push_back(a);
        argv.push_back(path("absent.yaml"));
        expect_refused(argv, bad);
    }
}

// ---------------------------------------------------------------------------------------------
// floodgate-tx (perf/): like floodgate run, the EAL first.

const BadValue kTxBad[] = {
    {"--seconds", "1x", "from 0.1 to 86400"},  // atof: 1
    {"--seconds", "-5", "from 0.1 to 86400"},   {"--seconds", "0", "from 0.1 to 86400"},
    {"--seconds", "nan", "from 0.1 to 86400"},  {"--seconds", "1e3", "from 0.1 to 86400"},
    {"--seconds", " 5", "from 0.1 to 86400"},   {"--wait-link", "-1", "from 0.1 to 3600"},
    {"--wait-link", "30s", "from 0.1 to 3600"},
};

TEST_F(Options, FloodgateTxRefusesLooseNumbers) {
    const std::string tx = build_bin("FLOODGATE_TX_BIN", "perf/floodgate-tx");
    for (const BadValue &bad : kTxBad) {
        std::vector<std::string> argv = {tx};
        for (std::string &a : eal_args()) argv.push_back(std::move(a));
        argv.push_back("--pcap");
        argv.push_back(path("absent.pcap"));
        expect_refused(argv, bad);
    }
}

}  // namespace
}  // namespace floodgate::test
