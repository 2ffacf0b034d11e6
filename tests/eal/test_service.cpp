// The dataplane service's clocks: override TTLs and uptime follow the monotonic clock, so a step
// of the wall clock (NTP, `date -s`) moves none of them, while the times shown to people follow
// the wall clock. The service runs on a fake pair of clocks (its ServiceClock seam).
#include <gtest/gtest.h>

#include <memory>

#include "dataplane/api/dataplane_commands.h"
#include "dataplane/service/service.h"

namespace floodgate {
namespace {

constexpr uint64_t kSecond = 1000000000;

class ServiceClockTest : public ::testing::Test {
  protected:
    void SetUp() override {
        RulesFile startup = parse_rules_file(
            "rules:\n  - name: dns\n    match: { proto: udp, dst_port: 53 }\n"
            "    limit: { rate: 10/s, burst: 5 }\n",
            "rules.yaml");
        std::string error;
        std::unique_ptr<RuleSet> first = RuleSet::build(startup.config, -1, &error);
        ASSERT_NE(first, nullptr) << error;
        live_ = std::make_unique<LiveRuleSet>(1, std::move(first));
        ASSERT_TRUE(live_->ok());
        ServiceClock clock;
        clock.monotonic_ns = [this] { return monotonic_ns_; };
        clock.wall_ns = [this] { return wall_ns_; };
        service_ = std::make_unique<Service>(
            live_.get(), startup, ServiceInfo{},
            [](const RuleSet &, unsigned) { return nlohmann::ordered_json::object(); }, clock);
    }
    nlohmann::json ask(const std::string &line) {
        return nlohmann::json::parse(service_->handle(line));
    }
    size_t overrides() { return service_->overrides()["overrides"].size(); }

    uint64_t monotonic_ns_ = 5000 * kSecond;
    uint64_t wall_ns_ = 1800000000 * kSecond;  // 2027
    std::unique_ptr<LiveRuleSet> live_;
    std::unique_ptr<Service> service_;
};

TEST_F(ServiceClockTest, AnOverrideLivesItsTtlWhateverTheWallClockDoes) {
    ASSERT_TRUE(
        ask(dataplane_request(DataplaneCommand::override_add,
                              {{"list", "block"}, {"prefix", "198.18.66.0/24"}, {"ttl_s", 60}})
                .dump())["ok"]);
    // The wall clock steps back an hour, then forward a day: the TTL does not move.
    wall_ns_ -= 3600 * kSecond;
    service_->expire_overrides();
    EXPECT_EQ(overrides(), 1u);
    wall_ns_ += 25 * 3600 * kSecond;
    service_->expire_overrides();
    ASSERT_EQ(overrides(), 1u) << "a wall-clock step forward expired the override";
    const auto row = service_->overrides()["overrides"][0];
    EXPECT_DOUBLE_EQ(row["ttl_left_s"].get<double>(), 60.0);
    // ... and the instant shown for it is the current wall clock plus what is left.
    EXPECT_DOUBLE_EQ(row["expires_unix"].get<double>(), (wall_ns_ + 60 * kSecond) / 1e9);
    // 60 s of monotonic time later, and only then, it is gone.
    monotonic_ns_ += 59 * kSecond;
    service_->expire_overrides();
    EXPECT_EQ(overrides(), 1u);
    monotonic_ns_ += 1 * kSecond;
    service_->expire_overrides();
    EXPECT_EQ(overrides(), 0u);
    EXPECT_EQ(service_->status()["overrides_expired"].get<uint64_t>(), 1u);
}

TEST_F(ServiceClockTest, UptimeCountsMonotonicTimeOnly) {
    monotonic_ns_ += 90 * kSecond;
    wall_ns_ -= 7200 * kSecond;  // before the start, by the wall clock: no underflow
    const auto status = service_->status();
    EXPECT_DOUBLE_EQ(status["uptime_s"].get<double>(), 90.0);
    EXPECT_DOUBLE_EQ(status["started_unix"].get<double>(), 1800000000.0);
}

}  // namespace
}  // namespace floodgate
