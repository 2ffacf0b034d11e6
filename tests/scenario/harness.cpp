#include "tests/scenario/harness.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <utility>

#include "dataplane/api/prefix.h"
#include "dataplane/core/parse.h"
#include "rules/load.h"

extern char **environ;

namespace floodgate::test {

namespace fs = std::filesystem;
using nlohmann::json;

// ---------------------------------------------------------------------------------------------
// Running the binary.

std::string read_file(const fs::path &p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

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
// The fixture.

void Scenario::SetUp() {
    char tmpl[] = "/tmp/floodgate_scenario_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr) << std::strerror(errno);
    dir_ = tmpl;
}

void Scenario::TearDown() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
}

void Scenario::write_text(const std::string &name, const std::string &text) {
    std::ofstream out(path(name), std::ios::binary);
    out << text;
    ASSERT_TRUE(out.good()) << "cannot write " << path(name);
}

void Scenario::write_trace(const Generator &gen, PcapPrecision precision) {
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

std::string Scenario::floodgate_bin() {
    const char *bin = std::getenv("FLOODGATE_BIN");
    return bin == nullptr ? "" : bin;
}

ProcessResult Scenario::run_replay(const std::string &config, const std::string &suffix) {
    std::vector<std::string> argv = {floodgate_bin(), "replay",
                                     "--config",      path(config),
                                     "--in",          path("trace.pcap"),
                                     "--pass",        path("pass" + suffix + ".pcap"),
                                     "--drop",        path("drop" + suffix + ".pcap"),
                                     "--stats",       path("stats" + suffix + ".json")};
    if (!inside_.empty()) {
        std::string list;
        for (const std::string &p : inside_) list += (list.empty() ? "" : ",") + p;
        argv.push_back("--inside");
        argv.push_back(list);
    }
    return run_process(argv, dir_);
}

void Scenario::replay(const std::string &suffix) {
    ASSERT_FALSE(floodgate_bin().empty()) << "set FLOODGATE_BIN to the floodgate binary";
    const ProcessResult r = run_replay("rules.yaml", suffix);
    ASSERT_EQ(r.exit_code, 0) << "floodgate replay failed; stderr:\n" << r.err;
}

void Scenario::check_against_model(const Generator &gen, const Observer &obs) {
    Config cfg;
    try {
        cfg = load_config(path("rules.yaml"));
    } catch (const ConfigError &e) {
        FAIL() << "the model cannot load the rules: " << e.what();
    }
    model_ = std::make_unique<ReferenceModel>(std::move(cfg), table_live_keys_);
    std::vector<Prefix> inside;
    for (const std::string &text : inside_) {
        std::string why;
        const std::optional<Prefix> p = parse_prefix(text, &why);
        ASSERT_TRUE(p.has_value()) << "--inside " << text << ": " << why;
        inside.push_back(*p);
    }
    model_->set_inside(std::move(inside));

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

void Scenario::run(const std::string &rules_yaml, const Generator &gen, PcapPrecision precision,
                   const Observer &obs) {
    ASSERT_NO_FATAL_FAILURE(write_text("rules.yaml", rules_yaml));
    ASSERT_NO_FATAL_FAILURE(write_trace(gen, precision));
    ASSERT_NO_FATAL_FAILURE(replay());
    ASSERT_NO_FATAL_FAILURE(check_against_model(gen, obs));
}

uint64_t Scenario::u64(const json &j, const char *field) {
    EXPECT_TRUE(j.contains(field) && j.at(field).is_number_integer()) << "no " << field;
    return j.contains(field) ? j.at(field).get<uint64_t>() : ~0ull;
}

void Scenario::check_stats() {
    const ModelCounters &c = model_->counters();
    const Config &cfg = model_->config();
    EXPECT_EQ(u64(stats_, "packets"), c.packets);
    EXPECT_EQ(u64(stats_, "passed"), c.passed);
    EXPECT_EQ(u64(stats_, "dropped"), c.dropped);
    EXPECT_EQ(u64(stats_, "malformed"), c.malformed);
    EXPECT_EQ(u64(stats_, "non_ip"), c.non_ip);
    EXPECT_EQ(u64(stats_, "allow_hits"), c.allow_hits);
    EXPECT_EQ(u64(stats_, "block_hits"), c.block_hits);
    EXPECT_EQ(u64(stats_, "established_marked"), c.established_marked);
    EXPECT_EQ(u64(stats_, "established_full"), c.established_full);
    EXPECT_EQ(u64(stats_, "marks_over_budget"), c.marks_over_budget);
    // Every reason is listed, zeros included; the model lists those it counted.
    using ReasonCounts = std::map<std::string, uint64_t>;
    ReasonCounts reasons = stats_.value("malformed_reasons", json::object()).get<ReasonCounts>();
    EXPECT_EQ(reasons.size(), static_cast<size_t>(MalformedReason::count) - 1);
    std::erase_if(reasons, [](const auto &r) { return r.second == 0; });
    EXPECT_EQ(reasons, c.malformed_reasons);

    ASSERT_TRUE(stats_.contains("table"));
    const json &table = stats_.at("table");
    for (const char *f : {"capacity", "occupancy", "reclaims", "bytes_per_entry"}) u64(table, f);
    if (table_live_keys_ == ReferenceModel::kUnlimitedTable) {
        EXPECT_EQ(c.table_full_events, 0u) << "a model without a table limit never fills it";
    }
    EXPECT_EQ(u64(table, "full_events"), c.table_full_events)
        << "only the table-full scenarios fill the table";

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
        EXPECT_EQ(u64(got, "overruled"), want.overruled);
        EXPECT_EQ(u64(got, "matched"),
                  u64(got, "passed") + u64(got, "refused") + u64(got, "overruled"));
        EXPECT_EQ(u64(got, "shadow_refused"), want.shadow_refused);
        EXPECT_EQ(u64(got, "table_full_shared"), want.table_full_shared);
        EXPECT_EQ(u64(got, "table_full_pass"), want.table_full_pass);
        EXPECT_EQ(u64(got, "table_full_drop"), want.table_full_drop);
        EXPECT_EQ(u64(got, "refused_established"), want.refused_established);
        EXPECT_EQ(u64(got, "refused_verified"), want.refused_verified);
        EXPECT_EQ(u64(got, "refused_known"), want.refused_known);
        EXPECT_EQ(u64(got, "refused_new"), want.refused_new);
        EXPECT_EQ(u64(got, "reserve_established"), want.reserve_established);
        EXPECT_EQ(u64(got, "reserve_verified"), want.reserve_verified);
        EXPECT_EQ(u64(got, "reserve_known"), want.reserve_known);
        if (rule.key_kind == KeyKind::dst || rule.key_kind == KeyKind::none) {
            EXPECT_EQ(u64(got, "refused"), u64(got, "refused_established") +
                                               u64(got, "refused_verified") +
                                               u64(got, "refused_known") + u64(got, "refused_new"));
        } else {
            EXPECT_EQ(u64(got, "refused_new") + u64(got, "refused_known") +
                          u64(got, "refused_established") + u64(got, "refused_verified"),
                      0u);
        }
        check_top_refused(got.value("top_refused", json::array()), rule, want);
    }
}

void Scenario::check_top_refused(const json &top, const Rule &rule, const ModelRuleCounters &c) {
    ASSERT_TRUE(top.is_array());
    ASSERT_EQ(top.size(), std::min<size_t>(10, c.refused_by_key.size())) << top.dump();
    std::map<SourceKey, uint64_t> got;
    uint64_t previous = ~0ull;
    for (const json &entry : top) {
        const std::string text = entry.value("source", "");
        std::string why;
        const std::optional<Prefix> p = parse_prefix(text, &why);
        ASSERT_TRUE(p.has_value()) << "top_refused source '" << text << "': " << why;
        EXPECT_EQ(p->len, ReferenceModel::report_len(rule, p->family)) << text;
        const uint64_t count = u64(entry, "count");
        EXPECT_LE(count, previous) << "top_refused is not sorted, most first";
        previous = count;
        const SourceKey key{p->family, p->addr};
        got[key] = count;
        if (!entry.contains("sampling_error")) continue;
        // Counted from samples: the model's count within the stated error, [count - error -
        // sampling_error, count + sampling_error], then taken as exact for the comparison below.
        const auto truth = c.refused_by_key.find(key);
        ASSERT_NE(truth, c.refused_by_key.end()) << text;
        const uint64_t sampling = u64(entry, "sampling_error"), error = u64(entry, "error");
        EXPECT_LE(count, truth->second + sampling) << text;
        EXPECT_GE(truth->second + error + sampling, count) << text;
        got[key] = truth->second;
    }
    if (c.refused_by_key.size() <= 10) {
        EXPECT_EQ(got, c.refused_by_key) << top.dump();
    }
}

// ---------------------------------------------------------------------------------------------
// Reading the model's results.

SourceKey key_of(uint8_t family, const IpAddr &addr, unsigned len) {
    SourceKey k{family, addr};
    mask_addr(&k.addr, len);
    return k;
}

uint64_t refused_for(const ModelRuleCounters &c, const SourceKey &k) {
    const auto it = c.refused_by_key.find(k);
    return it == c.refused_by_key.end() ? 0 : it->second;
}

int64_t worst_gcra_excess(const std::string &pass_pcap, int64_t burst, uint64_t interval_ns) {
    std::vector<uint64_t> t;
    for (const PcapRecord &rec : read_pcap(pass_pcap).records) t.push_back(rec.ts_ns);
    int64_t worst = INT64_MIN;
    for (size_t i = 0; i < t.size(); ++i)
        for (size_t j = i; j < t.size(); ++j) {
            const int64_t allowed = burst + static_cast<int64_t>((t[j] - t[i]) / interval_ns);
            worst = std::max(worst, static_cast<int64_t>(j - i + 1) - allowed);
        }
    return worst;
}

}  // namespace floodgate::test
