// Service::answer's routing: a load is decoded on a thread of its own (its payload patterns may
// compile for seconds), every other request at once, and which is which goes by the request's
// command, not by what its other fields happen to hold.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <thread>

#include "dataplane/api/dataplane_commands.h"
#include "dataplane/service/service.h"

namespace floodgate {
namespace {

class ServiceRoutingTest : public ::testing::Test {
  protected:
    void SetUp() override {
        // A rule named like the load command.
        startup_ = parse_rules_file(
            "rules:\n  - name: load\n    match: { proto: udp, dst_port: 53 }\n"
            "    limit: { rate: 10/s, burst: 5 }\n",
            "rules.yaml");
        std::string error;
        std::unique_ptr<RuleSet> first = RuleSet::build(startup_.config, -1, &error);
        ASSERT_NE(first, nullptr) << error;
        live_ = std::make_unique<LiveRuleSet>(1, std::move(first));
        ASSERT_TRUE(live_->ok());
        service_ = std::make_unique<Service>(
            live_.get(), startup_, ServiceInfo{},
            [](const RuleSet &, unsigned) { return nlohmann::ordered_json::object(); });
    }
    // The reply of an answer given at once; fails the test if it was routed to the load's thread.
    nlohmann::json at_once(const std::string &line) {
        LineServer::Answer a = service_->answer(line);
        EXPECT_FALSE(a.later) << line << ": routed as a load";
        return nlohmann::json::parse(a.line);
    }
    nlohmann::json at_once(const nlohmann::json &request) { return at_once(request.dump()); }

    RulesFile startup_;
    std::unique_ptr<LiveRuleSet> live_;
    std::unique_ptr<Service> service_;
};

TEST_F(ServiceRoutingTest, AModeRequestForARuleNamedLoadIsAModeRequest) {
    const nlohmann::json reply =
        at_once(dataplane_request(DataplaneCommand::mode, {{"rule", "load"}, {"mode", "shadow"}}));
    EXPECT_TRUE(reply.value("ok", false)) << reply.dump();
    EXPECT_EQ(reply.value("changed", false), true);
    EXPECT_EQ(service_->rules()["modes"]["load"], "shadow");
}

TEST_F(ServiceRoutingTest, ALoadIsDecodedOnItsOwnThread) {
    const nlohmann::json load = dataplane_request(
        DataplaneCommand::load,
        {{"source", "other.yaml"}, {"text", startup_.text + "# again\n"}, {"rules", startup_.doc}});
    LineServer::Answer a = service_->answer(load.dump());
    ASSERT_TRUE(a.later) << "a load was decoded on the server's thread";
    std::optional<std::string> reply;
    for (int i = 0; i < 500 && !(reply = a.later()); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ASSERT_TRUE(reply) << "no reply to the load";
    EXPECT_TRUE(nlohmann::json::parse(*reply).value("ok", false)) << *reply;
    EXPECT_EQ(service_->rules()["source"], "other.yaml");
}

TEST_F(ServiceRoutingTest, ARequestNamingTwoCommandsIsRefused) {
    ASSERT_TRUE(
        at_once(dataplane_request(DataplaneCommand::mode, {{"rule", "load"}, {"mode", "shadow"}}))
            .value("ok", false));
    // Routed by the first, then refused whole: neither a mode switch nor a load.
    const nlohmann::json reply = at_once(
        std::string(R"({"cmd": "mode", "rule": "load", "mode": "enforce", "cmd": "load"})"));
    EXPECT_FALSE(reply.value("ok", true));
    EXPECT_EQ(reply.value("error", ""), R"(field "cmd" given twice)");
    EXPECT_EQ(service_->rules()["modes"]["load"], "shadow");
}

}  // namespace
}  // namespace floodgate
