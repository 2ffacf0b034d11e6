// The scenario harness: end-to-end runs of the real binary. Each test writes a rules file and a
// generated pcap into a fresh temporary directory, runs
//   $FLOODGATE_BIN replay --config rules.yaml --in trace.pcap --pass pass.pcap --drop drop.pcap
//                         --stats stats.json [--inside PREFIX,...]
// and then regenerates the same traffic through the reference model (tests/reference_model.h):
// every frame must come out of PASS.pcap or DROP.pcap as the model says, with its bytes and
// timestamp, in order, and STATS.json must hold the model's counters. Frames from the inside
// (inside_, given to replay as --inside) must be in PASS.pcap in their place, and are counted
// as no decided packet.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/pcap_io.h"
#include "tests/reference_model.h"
#include "tests/scenario/traffic.h"

namespace floodgate::test {

struct ProcessResult {
    int exit_code = -1;
    std::string err;
};

std::string read_file(const std::filesystem::path &p);

// Runs argv with stdout and stderr sent to files in dir; no shell, so no quoting to get wrong.
ProcessResult run_process(const std::vector<std::string> &argv, const std::filesystem::path &dir);

// Sees every packet with the model's decision, while the output is checked.
using Observer = std::function<void(const GenPacket &, const ModelDecision &)>;

// The fixture: one temporary directory per test.
class Scenario : public ::testing::Test {
  protected:
    void SetUp() override;
    void TearDown() override;

    std::string path(const std::string &name) const { return (dir_ / name).string(); }
    void write_text(const std::string &name, const std::string &text);
    void write_trace(const Generator &gen, PcapPrecision precision);

    static std::string floodgate_bin();
    ProcessResult run_replay(const std::string &config, const std::string &suffix);
    // Replays trace.pcap under rules.yaml; outputs are pass<suffix>.pcap and so on.
    void replay(const std::string &suffix = "");

    // Regenerates the traffic through the model and compares it with pass.pcap, drop.pcap and
    // stats.json. obs, when given, sees every packet with the model's decision.
    void check_against_model(const Generator &gen, const Observer &obs = nullptr);

    // The whole scenario: rules, trace, replay, comparison.
    void run(const std::string &rules_yaml, const Generator &gen, PcapPrecision precision,
             const Observer &obs = nullptr);

    static uint64_t u64(const nlohmann::json &j, const char *field);
    void check_stats();
    // top_refused counts what the rule's refused and shadow_refused count, per key. With at
    // most 10 keys the summary must be exact; with more, it must still be 10 entries, most first.
    static void check_top_refused(const nlohmann::json &top, const Rule &rule,
                                  const ModelRuleCounters &c);

    std::filesystem::path dir_;
    // How many live keys the model lets the limiter table hold. A scenario that fills the table
    // sets it, before run(), to what its `table:` section gives; the rest never come near it.
    uint64_t table_live_keys_ = ReferenceModel::kUnlimitedTable;
    // The protected side's prefixes (replay --inside), when the scenario has one; set before
    // run().
    std::vector<std::string> inside_;
    std::unique_ptr<ReferenceModel> model_;
    nlohmann::json stats_;
};

// Reading the model's results.
SourceKey key_of(uint8_t family, const IpAddr &addr, unsigned len);

// What a pass pcap let through beyond one GCRA of burst b and interval T: the largest
// (frames passed in [t_i, t_j]) - (b + floor((t_j - t_i) / T)) over every window of its frames
// (0 or less for one exact GCRA; docs/design.md's cross-core bound for several cores).
int64_t worst_gcra_excess(const std::string &pass_pcap, int64_t burst, uint64_t interval_ns);
uint64_t refused_for(const ModelRuleCounters &c, const SourceKey &k);

}  // namespace floodgate::test
