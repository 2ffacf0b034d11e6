// decode_service_request (dataplane/service/request.h): each command of the protocol to its
// typed request, with every field checked, and the first problem of a bad one named.
#include "dataplane/service/request.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <variant>

#include "dataplane/api/base64.h"
#include "dataplane/api/message.h"
#include "dataplane/patterns/payload_database.h"

namespace floodgate {
namespace {

// The request line decoded as a T; anything else fails the test (gtest reports the exception).
template <typename T>
T decode_as(const std::string &line) {
    ServiceRequest r = decode_service_request(line);
    if (!std::holds_alternative<T>(r))
        throw std::runtime_error(line + ": decoded as alternative " + std::to_string(r.index()));
    return std::get<T>(std::move(r));
}

// A cluster_sync's charges: a row per other box and key, kept apart for the bound on each box.
TEST(ServiceRequest, ClusterSyncKeepsEachBoxsRow) {
    const ClusterSyncRequest c = decode_as<ClusterSyncRequest>(
        R"({"cmd": "cluster_sync", "store_ok": true, "boxes": 3, "charges": [["total", "k", 7],
            ["total", "k", 1000000000], ["other", "*", 5]], "escalations": [["198.18.9.9/32", 60000]]})");
    EXPECT_TRUE(c.store_ok);
    EXPECT_EQ(c.boxes, 3u);
    ASSERT_EQ(c.charges.size(), 2u);
    EXPECT_EQ(c.charges.at({"total", "k"}), (std::vector<uint64_t>{7, 1'000'000'000}));
    EXPECT_EQ(c.charges.at({"other", "*"}), (std::vector<uint64_t>{5}));
    EXPECT_EQ(c.escalations.size(), 1u);
}

std::string error_of(const std::string &line) {
    try {
        decode_service_request(line);
    } catch (const MessageError &e) {
        return e.what();
    }
    return "(accepted)";
}

TEST(ServiceRequest, EachCommandDecodesWithItsFields) {
    decode_as<StatusRequest>(R"({"cmd": "status"})");
    decode_as<RulesRequest>(R"({"cmd": "rules"})");
    decode_as<OverridesRequest>(R"({"cmd": "overrides"})");
    EXPECT_EQ(decode_as<StatsRequest>(R"({"cmd": "stats"})").top, 10u);
    EXPECT_EQ(decode_as<StatsRequest>(R"({"cmd": "stats", "top": 64})").top, 64u);

    const ModeRequest m =
        decode_as<ModeRequest>(R"({"cmd": "mode", "rule": "dns", "mode": "shadow"})");
    EXPECT_EQ(m.rule, "dns");
    EXPECT_EQ(m.mode, RuleMode::shadow);

    const OverrideAddRequest add = decode_as<OverrideAddRequest>(
        R"({"cmd": "override_add", "list": "allow", "prefix": "2001:db8::/32", "ttl_s": 90})");
    EXPECT_EQ(add.list, PrefixVerdict::allow);
    EXPECT_EQ(format_prefix(add.prefix), "2001:db8::/32");
    EXPECT_EQ(add.ttl_s, 90);
    EXPECT_EQ(decode_as<OverrideAddRequest>(
                  R"({"cmd": "override_add", "list": "block", "prefix": "198.18.0.0/15"})")
                  .ttl_s,
              0);

    const OverrideDelRequest del = decode_as<OverrideDelRequest>(
        R"({"cmd": "override_del", "list": "block", "prefix": "198.18.2.0/24"})");
    EXPECT_EQ(del.list, PrefixVerdict::block);
    EXPECT_EQ(format_prefix(del.prefix), "198.18.2.0/24");
}

TEST(ServiceRequest, LoadCarriesTheValidatedRules) {
    const LoadRequest load = decode_as<LoadRequest>(
        R"({"cmd": "load", "source": "v2.yaml", "text": "# as written\n", "rules":
            {"allow": ["198.18.1.0/24"], "rules": [{"name": "dns", "match": {"dst_port": "53"},
             "limit": {"rate": "5/s", "burst": "2"}}]}})");
    EXPECT_EQ(load.rules.name, "v2.yaml");
    EXPECT_EQ(load.rules.text, "# as written\n");
    ASSERT_EQ(load.rules.config.rules.size(), 1u);
    EXPECT_EQ(load.rules.config.rules[0].name, "dns");
    EXPECT_EQ(load.rules.config.rules[0].burst_pkts, 2u);
    EXPECT_EQ(load.rules.config.allow.size(), 1u);
    EXPECT_EQ(load.rules.doc["rules"][0]["name"], "dns");

    // Rules that do not validate are not a malformed message: the reply names the field.
    const RefusedLoadRequest refused = decode_as<RefusedLoadRequest>(
        R"({"cmd": "load", "source": "bad.yaml", "text": "", "rules":
            {"rules": [{"name": "a", "limit": {"rate": "10/s", "burst": "0"}}]}})");
    EXPECT_EQ(refused.error.file(), "bad.yaml");
    EXPECT_EQ(refused.error.field(), "rules[0].limit.burst");
}

// A load request carries the payload rules' databases the control plane compiled: the
// dataplane uses them instead of compiling again; one that does not load is compiled here.
TEST(ServiceRequest, LoadTakesCompiledPayloadDatabases) {
    if (!payload_engine_available()) GTEST_SKIP() << "built without Hyperscan";
    PayloadPattern p{PayloadPattern::Kind::literal, "attack", false};
    std::string error;
    int bad = -1;
    const auto db = PayloadDatabase::compile({p}, &error, &bad);
    ASSERT_NE(db, nullptr) << error;
    const std::string rules =
        R"({"rules": [{"name": "a", "match": {"payload": {"patterns": ["attack"]}},
            "limit": {"rate": "5/s", "burst": "2"}}]})";
    const auto load = [&](const std::string &dbs) {
        return decode_as<LoadRequest>(
            R"({"cmd": "load", "source": "p.yaml", "text": "", "rules": )" + rules + dbs + "}");
    };
    const auto entry = [](const std::string &bytes, const std::string &print) {
        return R"(, "payload_databases": {"0": {"database": ")" + base64_encode(bytes) +
               R"(", "fingerprint": ")" + print + "\"}}";
    };
    const std::string print = payload_fingerprint({p});
    const LoadRequest shipped = load(entry(db->serialize(), print));
    EXPECT_EQ(shipped.payload_precompiled, 1u);
    EXPECT_EQ(shipped.payload_compiled, 0u);
    ASSERT_NE(shipped.rules.config.rules[0].match.payload.compiled, nullptr);
    // A database for other patterns (its fingerprint is not this rule's): compiled here.
    const auto other = PayloadDatabase::compile(
        {PayloadPattern{PayloadPattern::Kind::literal, "a", false}}, &error, &bad);
    ASSERT_NE(other, nullptr) << error;
    const LoadRequest mixed_up = load(
        entry(other->serialize(),
              payload_fingerprint({PayloadPattern{PayloadPattern::Kind::literal, "a", false}})));
    EXPECT_EQ(mixed_up.payload_precompiled, 0u);
    EXPECT_EQ(mixed_up.payload_compiled, 1u);
    const LoadRequest garbage = load(entry("not a database", print));
    EXPECT_EQ(garbage.payload_precompiled, 0u);
    EXPECT_EQ(garbage.payload_compiled, 1u);
    const LoadRequest none = load("");
    EXPECT_EQ(none.payload_compiled, 1u);
    EXPECT_NE(error_of(R"({"cmd": "load", "source": "p", "text": "", "rules": )" + rules +
                       R"(, "payload_databases": {"0": {"database": "!!", "fingerprint": ""}}})")
                  .find("not base64"),
              std::string::npos);
    EXPECT_NE(error_of(R"({"cmd": "load", "source": "p", "text": "", "rules": )" + rules +
                       R"(, "payload_databases": {"x": ""}})")
                  .find("bad entry"),
              std::string::npos);
}

TEST(Base64, RoundTripsAndRefusesWhatIsNotCanonical) {
    for (const std::string &s :
         {std::string(), std::string("f"), std::string("fo"), std::string("foo"),
          std::string("foob"), std::string("\0\xff\x80", 3)})
        EXPECT_EQ(base64_decode(base64_encode(s)), s);
    EXPECT_EQ(base64_encode("foobar"), "Zm9vYmFy");
    EXPECT_EQ(base64_encode("fo"), "Zm8=");
    EXPECT_EQ(base64_decode("Zm9vYg=="), "foob");
    EXPECT_FALSE(base64_decode("Zm9"));       // length
    EXPECT_FALSE(base64_decode("Zm=v"));      // padding inside
    EXPECT_FALSE(base64_decode("Zm8=Zm8="));  // padding before the end
    EXPECT_FALSE(base64_decode("Zm8*"));      // alphabet
}

TEST(ServiceRequest, EachListedCommandHasItsName) {
    for (const char *name : {
#define NAME(name, request) #name,
             FG_DATAPLANE_COMMANDS(NAME)
#undef NAME
         }) {
        const std::optional<DataplaneCommand> command = parse_dataplane_command(name);
        ASSERT_TRUE(command) << name;
        EXPECT_STREQ(command_name(*command), name);
        EXPECT_EQ(dataplane_request(*command), nlohmann::json({{"cmd", name}}));
    }
    EXPECT_FALSE(parse_dataplane_command("rules_load"));  // the daemon's, not the dataplane's
}

TEST(ServiceRequest, TheFirstProblemIsTheOneNamed) {
    const struct {
        const char *line;
        const char *error;
    } cases[] = {
        {R"({"cmd": "reboot"})", R"(unknown command "reboot")"},
        {R"({"cmd": "mode", "rule": "a", "mode": "shadow", "cmd": "load"})",
         R"(field "cmd" given twice)"},
        {R"({"cmd": "stats", "top": 0})", R"(field "top" is out of range)"},
        {R"({"cmd": "stats", "top": 65})", R"(field "top" is out of range)"},
        {R"({"cmd": "stats", "top": "5"})", R"(field "top" is not an integer)"},
        {R"({"cmd": "load", "text": "", "rules": {}})", R"(missing field "source")"},
        {R"({"cmd": "load", "source": "a", "text": ""})",
         R"(missing field "rules" (the rules file's document, as floodctl sends it))"},
        {R"({"cmd": "mode", "mode": "shadow"})", R"(missing field "rule")"},
        {R"({"cmd": "mode", "rule": "a", "mode": "fast"})",
         R"(field "mode" must be "shadow" or "enforce")"},
        {R"({"cmd": "override_add", "prefix": "10.0.0.1/8", "list": "both"})",
         R"(field "list" must be "allow" or "block")"},
        {R"({"cmd": "override_add", "list": "block", "prefix": "10.0.0.1/8"})",
         R"(field "prefix": host bits are set below /8 (did you mean 10.0.0.0/8?))"},
        {R"({"cmd": "override_add", "list": "block", "prefix": "198.18.0.0/15", "ttl_s": -5})",
         R"(field "ttl_s" is out of range)"},
        {R"({"cmd": "override_del", "list": "allow", "prefix": 123})",
         R"(field "prefix" is not a string)"},
    };
    for (const auto &c : cases) EXPECT_EQ(error_of(c.line), c.error) << c.line;
}

}  // namespace
}  // namespace floodgate
