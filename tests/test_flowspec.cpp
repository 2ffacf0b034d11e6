// The FlowSpec exporter (control/upstream/flowspec.h) against a fake gobgp: a shell script that
// logs each call's argv and prints a canned RIB for -j reads, so every call and count is exact. The
// real gobgpd speakers are tests/control/test_flowspec_bgp.py's.
#include "control/upstream/flowspec.h"
#include "control/upstream/flowspec_desired.h"
#include "rules/doc.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace floodgate {
namespace {

constexpr uint64_t kSecond = 1'000'000'000;

// argv: --target API [-j] global rib -a FAMILY ...; a file named "fail", "slow" or "big" in its
// directory makes each call fail, hang or print more than the exporter reads. FAMILY.json is
// the RIB a -j read prints, as gobgp 3.10 prints it; an add or del changes it as gobgpd would,
// unless a file named "refuse" is there: then an add exits 0 and the RIB stays as it was, as
// with gobgpd's default-import-policy = "reject-route".
constexpr const char *kFakeGobgp = R"(#!/usr/bin/python3
import json, os, sys, time
d = os.path.dirname(os.path.abspath(sys.argv[0]))
args = sys.argv[3:]
with open(os.path.join(d, "calls"), "a") as f:
    f.write(" ".join(sys.argv[1:]) + "\n")
if os.path.exists(os.path.join(d, "fail")):
    sys.stderr.write("error: connection refused\n")
    sys.exit(1)
if os.path.exists(os.path.join(d, "slow")):
    time.sleep(10)
if os.path.exists(os.path.join(d, "big")):
    sys.stdout.write("\0" * 5000000)
    sys.exit(0)
read = args[0] == "-j"
family = args[4 if read else 3]
path = os.path.join(d, family + ".json")
rib = json.load(open(path)) if os.path.exists(path) else {}
if read:
    print(json.dumps(rib))
    sys.exit(0)
verb, words = args[4], args[5:]
if verb == "del" and words == ["all"]:
    rib = {k: v for k, v in rib.items() if all("neighbor-ip" in p for p in v)}
elif "flowspec" in family:
    def ops(text):
        if text.startswith("=="):
            return [{"op": 0x81, "value": int(text[2:])}]
        lo, hi = text[2:].split("&<=")
        return [{"op": 0x13, "value": int(lo)}, {"op": 0xD5, "value": int(hi)}]
    kv = dict(zip(words[1:-2:2], words[2:-2:2]))
    nlri = [{"type": t, "value": {"prefix": kv[k]}} for t, k in ((1, "destination"), (2, "source"))
            if k in kv]
    nlri += [{"type": t, "value": ops(kv[k])} for t, k in ((3, "protocol"), (5, "destination-port"))
             if k in kv]
    nlri.sort(key=lambda c: c["type"])
    route = " ".join(words)
    if verb == "add":
        rib[route] = [{"nlri": {"value": nlri}, "attrs": []}]
    else:
        rib.pop(route, None)
else:
    if verb == "add":
        rib[words[0]] = [{"nlri": {"prefix": words[0]},
                          "attrs": [{"type": 8, "communities": [4294902426]}]}]
    else:
        rib.pop(words[0], None)
if verb != "add" or not os.path.exists(os.path.join(d, "refuse")):
    json.dump(rib, open(path, "w"))
)";

class FakeGobgp {
  public:
    FakeGobgp() {
        char dir[] = "/tmp/fg-flowspec-XXXXXX";
        dir_ = ::mkdtemp(dir);
        write("gobgp", kFakeGobgp);
        std::filesystem::permissions(dir_ / "gobgp", std::filesystem::perms::owner_all);
    }
    ~FakeGobgp() { std::filesystem::remove_all(dir_); }

    std::string path() const { return dir_ / "gobgp"; }
    void write(const std::string &name, const std::string &text) {
        std::ofstream(dir_ / name) << text;
    }
    void remove(const std::string &name) { std::filesystem::remove(dir_ / name); }
    // The calls since the last take, without "--target API".
    std::vector<std::string> take_calls() {
        std::vector<std::string> calls;
        std::ifstream in(dir_ / "calls");
        for (std::string line; std::getline(in, line);)
            calls.push_back(line.substr(line.find(' ', sizeof "--target") + 1));
        remove("calls");
        return calls;
    }

  private:
    std::filesystem::path dir_;
};

size_t count(const std::vector<std::string> &calls, const std::string &part) {
    size_t n = 0;
    for (const std::string &c : calls) n += c.find(part) != std::string::npos;
    return n;
}

Prefix prefix(const std::string &text) {
    std::string why;
    return parse_prefix(text, &why).value();
}

FlowspecRule rule(const std::string &source, std::optional<std::string> destination = {},
                  std::optional<uint8_t> protocol = {},
                  std::optional<PortRange> port = std::nullopt) {
    FlowspecRule r;
    r.source = prefix(source);
    if (destination) r.destination = prefix(*destination);
    r.protocol = protocol;
    r.destination_port = port;
    r.origin = "test";
    return r;
}

// n /32 sources in 198.18.100.0/22, in order.
std::vector<FlowspecRule> spread(size_t n) {
    std::vector<FlowspecRule> rules;
    for (size_t i = 0; i < n; ++i)
        rules.push_back(rule("198.18." + std::to_string(100 + i / 250) + "." +
                             std::to_string(i % 250) + "/32"));
    return rules;
}

FlowspecOptions options(const FakeGobgp &fake) {
    FlowspecOptions o;
    o.gobgp = fake.path();
    o.max_new_per_s = 1e6;
    return o;
}

std::string joined(const std::vector<std::string> &words) {
    std::string s;
    for (const std::string &w : words) s += (s.empty() ? "" : " ") + w;
    return s;
}

// ---- flowspec_words ----

TEST(FlowspecWords, FullIPv4Rule) {
    EXPECT_EQ(
        joined(flowspec_words(rule("198.18.66.6/32", "198.18.1.1/32", 17, PortRange{53, 53}))),
        "match source 198.18.66.6/32 destination 198.18.1.1/32 protocol ==17 "
        "destination-port ==53 then discard");
}

TEST(FlowspecWords, SourceOnlyAndPortRange) {
    EXPECT_EQ(joined(flowspec_words(rule("198.18.66.0/24"))),
              "match source 198.18.66.0/24 then discard");
    EXPECT_EQ(joined(flowspec_words(rule("198.18.66.0/24", {}, {}, PortRange{1000, 2000}))),
              "match source 198.18.66.0/24 destination-port >=1000&<=2000 then discard");
    EXPECT_EQ(joined(flowspec_words(rule("198.18.66.6/32", {}, 0))),
              "match source 198.18.66.6/32 protocol ==0 then discard");
}

TEST(FlowspecWords, IPv6) {
    EXPECT_EQ(
        joined(flowspec_words(rule("2001:db8::1/128", "2001:db8:1::/48", 6, PortRange{80, 443}))),
        "match source 2001:db8::1/128 destination 2001:db8:1::/48 protocol ==6 "
        "destination-port >=80&<=443 then discard");
}

TEST(FlowspecRule, TheMatchIsTheIdentityNotTheOrigin) {
    FlowspecRule a = rule("198.18.66.6/32", {}, 17), b = a;
    b.origin = "block";
    EXPECT_EQ(a, b);
    b.destination_port = PortRange{53, 53};
    EXPECT_NE(a, b);
}

// ---- Limits and rate ----

TEST(FlowspecExporter, FiftyDesiredTenAllowed) {
    FakeGobgp fake;
    FlowspecOptions o = options(fake);
    o.max_announced = 10;
    FlowspecExporter e(o);
    e.reconcile(spread(50), 0);
    const std::vector<std::string> calls = fake.take_calls();
    // The first call reads the RIB, and reads back the family it changed.
    EXPECT_EQ(count(calls, "-j global rib -a "), 5u);
    EXPECT_EQ(count(calls, " add "), 10u);
    EXPECT_EQ(count(calls, "ipv4-flowspec add match source 198.18.100.0/32 then discard"), 1u);
    EXPECT_EQ(count(calls, "ipv4-flowspec add match source 198.18.100.9/32 then discard"), 1u);
    const auto &c = e.counters();
    EXPECT_EQ(c.announced, 10u);
    EXPECT_EQ(c.in_rib, 10u);
    EXPECT_EQ(c.withheld_limit, 40u);
    EXPECT_EQ(c.withheld_rate, 0u);
    EXPECT_EQ(c.failed_calls, 0u);

    e.reconcile(spread(50), kSecond);  // nothing changed: no call at all
    EXPECT_TRUE(fake.take_calls().empty());
    EXPECT_EQ(e.counters().withheld_limit, 40u);
}

TEST(FlowspecExporter, NewAnnouncementsWithinTheRate) {
    FakeGobgp fake;
    FlowspecOptions o = options(fake);
    o.max_new_per_s = 5;  // burst 5
    FlowspecExporter e(o);
    const std::vector<FlowspecRule> desired = spread(20);
    e.reconcile(desired, 100 * kSecond);
    EXPECT_EQ(e.counters().in_rib, 5u);
    EXPECT_EQ(e.counters().withheld_rate, 15u);
    e.reconcile(desired, 100 * kSecond + kSecond / 5);  // 0.2 s: one token
    EXPECT_EQ(e.counters().in_rib, 6u);
    e.reconcile(desired, 100 * kSecond + kSecond / 5 + kSecond / 10);  // half a token
    EXPECT_EQ(e.counters().in_rib, 6u);
    e.reconcile(desired, 110 * kSecond);  // the bucket holds 5 at most
    EXPECT_EQ(e.counters().in_rib, 11u);
    EXPECT_EQ(e.counters().withheld_rate, 9u);
    EXPECT_EQ(e.counters().announced, 11u);
    e.reconcile(desired, 109 * kSecond);  // a clock that went back refills nothing
    EXPECT_EQ(e.counters().in_rib, 11u);
}

TEST(FlowspecExporter, NotDesiredAnyMoreIsWithdrawn) {
    FakeGobgp fake;
    FlowspecExporter e(options(fake));
    const FlowspecRule v4 = rule("198.18.66.6/32", "198.18.1.1/32", 17, PortRange{53, 53});
    const FlowspecRule v6 = rule("2001:db8::1/128", {}, 17);
    e.reconcile({v4, v6}, 0);
    fake.take_calls();
    e.reconcile({v6}, kSecond);
    const std::vector<std::string> calls = fake.take_calls();
    ASSERT_EQ(calls.size(), 2u);
    EXPECT_EQ(calls[0], "global rib -a ipv4-flowspec del " + joined(flowspec_words(v4)));
    EXPECT_EQ(calls[1], "-j global rib -a ipv4-flowspec");  // read back
    EXPECT_EQ(e.counters().withdrawn, 1u);
    EXPECT_EQ(e.counters().in_rib, 1u);
}

TEST(FlowspecExporter, AMoreImportantRuleTakesTheLeastImportantPlace) {
    FakeGobgp fake;
    FlowspecOptions o = options(fake);
    o.max_announced = 2;
    FlowspecExporter e(o);
    const FlowspecRule a = rule("198.18.66.1/32"), b = rule("198.18.66.2/32"),
                       c = rule("198.18.66.3/32");
    e.reconcile({a, b}, 0);
    fake.take_calls();
    e.reconcile({c, a, b}, kSecond);
    const std::vector<std::string> calls = fake.take_calls();
    ASSERT_EQ(calls.size(), 3u);
    EXPECT_EQ(calls[0], "global rib -a ipv4-flowspec del " + joined(flowspec_words(b)));
    EXPECT_EQ(calls[1], "global rib -a ipv4-flowspec add " + joined(flowspec_words(c)));
    EXPECT_EQ(e.counters().in_rib, 2u);
    EXPECT_EQ(e.counters().withheld_limit, 1u);
}

TEST(FlowspecExporter, NoTokenNoDisplacement) {
    FakeGobgp fake;
    FlowspecOptions o = options(fake);
    o.max_announced = 2;
    o.max_new_per_s = 2;
    FlowspecExporter e(o);
    e.reconcile(spread(2), 0);
    std::vector<FlowspecRule> more = spread(3);
    std::swap(more[0], more[2]);  // the third first
    fake.take_calls();
    e.reconcile(more, 1);  // the bucket is empty: b stays rather than leaving a hole
    EXPECT_TRUE(fake.take_calls().empty());
    EXPECT_EQ(e.counters().withheld_rate, 1u);
    EXPECT_EQ(e.counters().withheld_limit, 0u);
}

TEST(FlowspecExporter, InvalidAndRepeatedRulesAreSkipped) {
    FakeGobgp fake;
    FlowspecExporter e(options(fake));
    FlowspecRule host_bits = rule("198.18.66.6/32");
    host_bits.source.len = 24;
    FlowspecRule families = rule("198.18.66.6/32", "2001:db8::/32");
    FlowspecRule backwards = rule("198.18.66.6/32", {}, 17, PortRange{2000, 1000});
    const FlowspecRule ok = rule("198.18.66.7/32");
    e.reconcile({host_bits, families, backwards, ok, ok}, 0);
    EXPECT_EQ(e.counters().invalid, 3u);
    EXPECT_EQ(e.counters().announced, 1u);
    EXPECT_EQ(e.counters().in_rib, 1u);
}

// ---- What no router is told to drop ----

TEST(FlowspecExporter, ShortSourcesAndNeverBlockAreRefusedByReason) {
    FakeGobgp fake;
    FlowspecOptions o = options(fake);
    o.never_block = {prefix("203.0.113.0/30"), prefix("2001:db8:ff::1/128")};
    FlowspecExporter e(o);
    e.reconcile({rule("10.0.0.0/8"), rule("198.18.0.0/15"), rule("198.18.0.0/16"),
                 rule("2001:dba::/31"), rule("2001:db9::/32"),
                 rule("203.0.113.2/32"),    // inside a never_block entry
                 rule("203.0.112.0/21"),    // covering one
                 rule("2001:db8:ff::/48"),  // covering the other
                 rule("203.0.113.4/32")},   // beside them: announced
                0);
    const std::vector<std::string> calls = fake.take_calls();
    EXPECT_EQ(count(calls, " add "), 3u);
    EXPECT_EQ(count(calls, "add match source 198.18.0.0/16 "), 1u);
    EXPECT_EQ(count(calls, "add match source 2001:db9::/32 "), 1u);
    EXPECT_EQ(count(calls, "add match source 203.0.113.4/32 "), 1u);
    EXPECT_EQ(e.counters().refused_short_source, 3u);
    EXPECT_EQ(e.counters().refused_never_block, 3u);
    EXPECT_EQ(e.counters().in_rib, 3u);

    o.min_source_len4 = 8;  // shorter limits: the /8, the /15 and the /31 too
    o.min_source_len6 = 0;
    FlowspecExporter wider(o);
    wider.reconcile({rule("10.0.0.0/8"), rule("198.18.0.0/15"), rule("2001:dba::/31")}, 0);
    EXPECT_EQ(wider.counters().refused_short_source, 0u);
    EXPECT_EQ(wider.counters().asked, 3u);
}

// ---- Checked where it lands: the RIB read back after each change ----

TEST(FlowspecExporter, ARuleTheRibRefusesIsMissingNotAnnounced) {
    FakeGobgp fake;
    fake.write("refuse", "");  // gobgpd's import policy rejects what the CLI adds
    FlowspecOptions o = options(fake);
    o.rtbh = true;
    o.resync_interval_ms = 10'000;
    FlowspecExporter e(o);
    const FlowspecRule dns = rule("198.18.66.6/32", "198.18.1.1/32", 17, PortRange{53, 53});
    e.reconcile({dns}, 0);
    const std::vector<std::string> calls = fake.take_calls();
    EXPECT_EQ(count(calls, " add "), 2u);                           // the rule and its blackhole
    EXPECT_EQ(count(calls, "-j global rib -a ipv4-flowspec"), 2u);  // read, read back
    EXPECT_EQ(count(calls, "-j global rib -a ipv4"), 4u);           // and the ipv4 family's
    const auto &c = e.counters();
    EXPECT_EQ(c.announced, 2u);
    EXPECT_EQ(c.asked, 1u);
    EXPECT_EQ(c.in_rib, 0u);
    EXPECT_EQ(c.missing, 1u);
    EXPECT_EQ(c.blackholes_asked, 1u);
    EXPECT_EQ(c.blackholes_in_rib, 0u);
    EXPECT_EQ(c.blackholes_missing, 1u);
    EXPECT_EQ(c.missing_after_add, 2u);
    EXPECT_EQ(c.failed_calls, 0u);  // every call exited 0
    EXPECT_EQ(e.last_error(),
              "2 route(s) added but not in gobgpd's RIB read back (its import policy refused "
              "them?): source 198.18.66.6/32 destination 198.18.1.1/32 protocol ==17 "
              "destination-port ==53 then discard (test)");
    const std::vector<FlowspecExporter::RuleState> states = e.rule_states();
    ASSERT_EQ(states.size(), 1u);
    EXPECT_EQ(states[0].match, joined(flowspec_words(dns)));
    EXPECT_FALSE(states[0].in_rib);

    e.reconcile({dns}, kSecond);  // not added again before the resync
    EXPECT_TRUE(fake.take_calls().empty());
    EXPECT_EQ(e.counters().missing, 1u);

    fake.remove("refuse");  // the policy fixed: the resync adds it again, and it lands
    e.reconcile({dns}, 10 * kSecond);
    EXPECT_EQ(count(fake.take_calls(), " add "), 2u);
    EXPECT_EQ(e.counters().in_rib, 1u);
    EXPECT_EQ(e.counters().missing, 0u);
    EXPECT_EQ(e.counters().blackholes_in_rib, 1u);
    EXPECT_EQ(e.counters().missing_after_add, 2u);
    EXPECT_TRUE(e.rule_states().at(0).in_rib);
}

TEST(FlowspecExporter, ARuleLostFromTheRibIsMissingUntilTheResync) {
    FakeGobgp fake;
    FlowspecOptions o = options(fake);
    o.resync_interval_ms = 10'000;
    FlowspecExporter e(o);
    const FlowspecRule a = rule("198.18.66.1/32"), b = rule("198.18.66.2/32");
    e.reconcile({a}, 0);
    EXPECT_EQ(e.counters().in_rib, 1u);
    fake.remove("ipv4-flowspec.json");  // a gobgpd restart loses a
    e.reconcile({a, b}, kSecond);       // b's read-back shows it
    EXPECT_EQ(e.counters().asked, 2u);
    EXPECT_EQ(e.counters().in_rib, 1u);
    EXPECT_EQ(e.counters().missing, 1u);
    EXPECT_EQ(e.counters().missing_after_add, 0u);  // b landed; a was not added now
    e.reconcile({a, b}, 10 * kSecond);
    EXPECT_EQ(e.counters().in_rib, 2u);
    EXPECT_EQ(e.counters().missing, 0u);
}

// ---- Reading the RIB ----

// gobgp 3.10's -j output (measured): a local path and one received from the router.
constexpr const char *kFlowspecRib = R"({
 "[source: 198.18.66.6/32][protocol: ==udp][destination-port: ==53]": [{"nlri": {"value": [
   {"type": 2, "value": {"prefix": "198.18.66.6/32"}},
   {"type": 3, "value": [{"op": 129, "value": 17}]},
   {"type": 5, "value": [{"op": 129, "value": 53}]}]},
   "age": 1796324981, "best": true, "attrs": [{"type": 1, "value": 2},
   {"type": 16, "value": [{"type": 128, "subtype": 6, "as": 0, "rate": 0}]}], "stale": false}],
 "[source: 198.18.66.7/32][destination-port: >=1000&<=2000]": [{"nlri": {"value": [
   {"type": 2, "value": {"prefix": "198.18.66.7/32"}},
   {"type": 5, "value": [{"op": 19, "value": 1000}, {"op": 213, "value": 2000}]}]},
   "attrs": []}],
 "[source: 198.18.99.1/32]": [{"nlri": {"value": [
   {"type": 2, "value": {"prefix": "198.18.99.1/32"}}]},
   "attrs": [], "source-id": "198.18.250.2", "neighbor-ip": "198.18.250.2"}]})";

TEST(FlowspecExporter, AStaleRuleIsWithdrawnAndADesiredOneKept) {
    FakeGobgp fake;
    fake.write("ipv4-flowspec.json", kFlowspecRib);
    FlowspecExporter e(options(fake));
    const FlowspecRule kept = rule("198.18.66.7/32", {}, {}, PortRange{1000, 2000});
    e.reconcile({kept}, 0);
    const std::vector<std::string> calls = fake.take_calls();
    EXPECT_EQ(count(calls, " add "), 0u);  // a restart does not announce it again
    ASSERT_EQ(count(calls, " del "), 1u);
    EXPECT_EQ(calls[calls.size() - 2],
              "global rib -a ipv4-flowspec del match source 198.18.66.6/32 "
              "protocol ==17 destination-port ==53 then discard");
    EXPECT_EQ(e.counters().stale_withdrawn, 1u);
    EXPECT_EQ(e.counters().withdrawn, 0u);
    EXPECT_EQ(e.counters().in_rib, 1u);  // the router's own route is not ours
}

TEST(FlowspecExporter, AForeignPathClearsItsFamily) {
    FakeGobgp fake;
    // A source-port component (type 6): words of ours cannot name it.
    fake.write("ipv6-flowspec.json", R"({"x": [{"nlri": {"value": [
        {"type": 2, "value": {"prefix": "2001:db8::1/128"}, "offset": 0},
        {"type": 6, "value": [{"op": 129, "value": 53}]}]}}]})");
    FlowspecExporter e(options(fake));
    e.reconcile({rule("2001:db8::1/128")}, 0);
    const std::vector<std::string> calls = fake.take_calls();
    EXPECT_EQ(count(calls, "global rib -a ipv6-flowspec del all"), 1u);
    EXPECT_EQ(count(calls, "global rib -a ipv6-flowspec add match source 2001:db8::1/128"), 1u);
    EXPECT_EQ(e.counters().stale_withdrawn, 1u);
}

TEST(FlowspecExporter, TheRibIsReadAgainAfterAFailureAndEveryResyncInterval) {
    FakeGobgp fake;
    FlowspecOptions o = options(fake);
    o.resync_interval_ms = 10'000;
    FlowspecExporter e(o);
    const std::vector<FlowspecRule> one = {rule("198.18.66.6/32")};
    e.reconcile(one, 0);
    EXPECT_EQ(count(fake.take_calls(), "-j global rib"), 5u);  // 4, and 1 read back
    e.reconcile(one, 9 * kSecond);
    EXPECT_EQ(count(fake.take_calls(), "-j global rib"), 0u);
    fake.remove("ipv4-flowspec.json");  // gobgpd restarted
    e.reconcile(one, 10 * kSecond);     // the read finds the RIB empty
    std::vector<std::string> calls = fake.take_calls();
    EXPECT_EQ(count(calls, "-j global rib"), 5u);
    EXPECT_EQ(count(calls, " add "), 1u);

    fake.write("fail", "");
    e.reconcile({}, 11 * kSecond);
    EXPECT_EQ(e.counters().failed_calls, 1u);
    EXPECT_NE(e.last_error().find("exit 1: error: connection refused"), std::string::npos)
        << e.last_error();
    EXPECT_EQ(fake.take_calls().size(), 1u);  // a failed call ends the reconcile
    fake.remove("fail");
    e.reconcile({}, 12 * kSecond);
    calls = fake.take_calls();
    EXPECT_EQ(count(calls, "-j global rib"), 5u);
    EXPECT_EQ(count(calls, " del "), 1u);  // the rule the RIB holds, no longer desired
    EXPECT_EQ(e.counters().stale_withdrawn, 1u);
}

TEST(FlowspecExporter, ACallIsKilledPastItsTimeout) {
    FakeGobgp fake;
    fake.write("slow", "");
    FlowspecOptions o = options(fake);
    o.call_timeout_ms = 300;
    FlowspecExporter e(o);
    const auto start = std::chrono::steady_clock::now();
    e.reconcile({rule("198.18.66.6/32")}, 0);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
    EXPECT_EQ(e.counters().failed_calls, 1u);
    EXPECT_NE(e.last_error().find("timed out"), std::string::npos) << e.last_error();
}

TEST(FlowspecExporter, OutputPastTheCapFailsTheCall) {
    FakeGobgp fake;
    fake.write("big", "");
    FlowspecExporter e(options(fake));
    e.reconcile({rule("198.18.66.6/32")}, 0);
    EXPECT_EQ(e.counters().failed_calls, 1u);
    EXPECT_NE(e.last_error().find("bytes of output"), std::string::npos) << e.last_error();
}

TEST(FlowspecExporter, AMissingCliFails) {
    FlowspecOptions o;
    o.gobgp = "/nonexistent/gobgp";
    FlowspecExporter e(o);
    e.reconcile({rule("198.18.66.6/32")}, 0);
    EXPECT_EQ(e.counters().failed_calls, 1u);
    EXPECT_EQ(e.counters().in_rib, 0u);
    EXPECT_EQ(e.counters().withheld_rate, 1u);
}

// ---- RTBH ----

TEST(FlowspecExporter, RtbhAnnouncesSingleAddressSourcesOnce) {
    FakeGobgp fake;
    FlowspecOptions o = options(fake);
    o.rtbh = true;
    FlowspecExporter e(o);
    e.reconcile({rule("198.18.66.6/32", {}, 17, PortRange{53, 53}), rule("198.18.66.6/32", {}, 6),
                 rule("198.18.67.0/24"), rule("2001:db8::1/128")},
                0);
    std::vector<std::string> calls = fake.take_calls();
    EXPECT_EQ(count(calls,
                    "global rib -a ipv4 add 198.18.66.6/32 nexthop 192.0.2.1 community "
                    "65535:666"),
              1u);
    EXPECT_EQ(count(calls,
                    "global rib -a ipv6 add 2001:db8::1/128 nexthop 100::1 community "
                    "65535:666"),
              1u);
    EXPECT_EQ(count(calls, "-a ipv4 add 198.18.67.0"), 0u);
    EXPECT_EQ(e.counters().blackholes_in_rib, 2u);
    EXPECT_EQ(e.counters().announced, 6u);

    // The blackhole stays while one rule with its source does.
    e.reconcile({rule("198.18.66.6/32", {}, 6)}, kSecond);
    calls = fake.take_calls();
    EXPECT_EQ(count(calls, "-a ipv4 del 198.18.66.6/32"), 0u);
    EXPECT_EQ(count(calls, "-a ipv6 del 2001:db8::1/128"), 1u);
    EXPECT_EQ(e.counters().blackholes_in_rib, 1u);
}

// A blackhole of an earlier run is stale when RTBH is off now; other local routes are not ours.
TEST(FlowspecExporter, StaleBlackholesAreWithdrawnWithRtbhOff) {
    FakeGobgp fake;
    fake.write("ipv4.json", R"({
      "198.18.66.6/32": [{"nlri": {"prefix": "198.18.66.6/32"}, "attrs": [{"type": 1, "value": 2},
        {"type": 8, "communities": [4294902426]}, {"type": 3, "nexthop": "192.0.2.1"}]}],
      "198.18.77.0/24": [{"nlri": {"prefix": "198.18.77.0/24"}, "attrs": [{"type": 1, "value": 2},
        {"type": 3, "nexthop": "198.18.250.2"}]}]})");
    FlowspecExporter e(options(fake));
    e.reconcile({rule("198.18.66.6/32")}, 0);
    const std::vector<std::string> calls = fake.take_calls();
    EXPECT_EQ(count(calls, " del "), 1u);
    EXPECT_EQ(count(calls, "global rib -a ipv4 del 198.18.66.6/32"), 1u);
    EXPECT_EQ(e.counters().stale_withdrawn, 1u);
}

TEST(FlowspecExporter, WithdrawAllClearsEachFamilyInOneCall) {
    FakeGobgp fake;
    FlowspecOptions o = options(fake);
    o.rtbh = true;
    FlowspecExporter e(o);
    std::vector<FlowspecRule> desired = spread(30);
    desired.push_back(rule("2001:db8::/64"));
    e.reconcile(desired, 0);
    fake.take_calls();
    e.withdraw_all();
    const std::vector<std::string> calls = fake.take_calls();
    EXPECT_EQ(count(calls, "global rib -a ipv4-flowspec del all"), 1u);
    EXPECT_EQ(count(calls, "global rib -a ipv6-flowspec del all"), 1u);
    EXPECT_EQ(count(calls, "global rib -a ipv4 del "), 30u);
    EXPECT_EQ(calls.size(), 32u);
    EXPECT_EQ(e.counters().withdrawn, 61u);
    EXPECT_EQ(e.counters().in_rib, 0u);
    EXPECT_EQ(e.counters().blackholes_in_rib, 0u);
}

// ---- parse_rib on what gobgp never prints ----

TEST(ParseRib, ReadsOurShapesAndSkipsReceivedPaths) {
    RibRead read;
    std::string error;
    ASSERT_TRUE(parse_rib(kFlowspecRib, RibFamily::flowspec4, &read, &error)) << error;
    ASSERT_EQ(read.rules.size(), 2u);
    EXPECT_EQ(read.rules[0], rule("198.18.66.6/32", {}, 17, PortRange{53, 53}));
    EXPECT_EQ(read.rules[1], rule("198.18.66.7/32", {}, {}, PortRange{1000, 2000}));
    EXPECT_EQ(read.foreign, 0u);
    // An IPv4 path in the IPv6 family's output is not ours.
    ASSERT_TRUE(parse_rib(kFlowspecRib, RibFamily::flowspec6, &read, &error)) << error;
    EXPECT_EQ(read.foreign, 2u);
}

TEST(ParseRib, ShapesNotOursAreForeign) {
    const char *paths[] = {
        R"({"type": 2, "value": {"prefix": "198.18.66.6/32"}}, {"type": 3, "value": [{"op": 1, "value": 6}, {"op": 129, "value": 17}]})",
        R"({"type": 2, "value": {"prefix": "198.18.66.6/32"}}, {"type": 5, "value": [{"op": 19, "value": 1000}, {"op": 149, "value": 2000}]})",
        R"({"type": 2, "value": {"prefix": "198.18.66.6/32"}}, {"type": 5, "value": [{"op": 19, "value": 53}, {"op": 213, "value": 53}]})",
        R"({"type": 2, "value": {"prefix": "198.18.66.6/32"}}, {"type": 3, "value": [{"op": 129, "value": 256}]})",
        R"({"type": 2, "value": {"prefix": "198.18.66.6/32"}}, {"type": 2, "value": {"prefix": "198.18.66.7/32"}})",
        R"({"type": 2, "value": {"prefix": "198.18.66.6/32"}, "offset": 8})",
        R"({"type": 1, "value": {"prefix": "198.18.66.6/32"}})",
        R"({"type": 2, "value": {"prefix": "198.18.66.6/24"}})",
        R"({"type": 2, "value": {"prefix": 7}})",
        R"({"type": -2, "value": {"prefix": "198.18.66.6/32"}})",
        R"({"type": 2.0, "value": {"prefix": "198.18.66.6/32"}})",
        R"("source")",
    };
    for (const char *components : paths) {
        RibRead read;
        std::string error;
        const std::string text =
            std::string(R"({"k": [{"nlri": {"value": [)") + components + "]}}]}";
        ASSERT_TRUE(parse_rib(text, RibFamily::flowspec4, &read, &error)) << text << error;
        EXPECT_EQ(read.foreign, 1u) << text;
        EXPECT_TRUE(read.rules.empty()) << text;
    }
}

TEST(ParseRib, MalformedOutputIsRefusedNotTrusted) {
    const std::string deep = std::string(100000, '[') + std::string(100000, ']');
    const std::string deep_path = R"({"k": [)" + deep + "]}";
    const char *bad[] = {
        "",           "{",           "[]",       "null",
        "{\"k\": 1}", "{\"k\": {}}", "\"text\"", "{\"error\": \"context deadline exceeded\"}",
        "\xff\xfe"};
    for (const RibFamily f : {RibFamily::flowspec4, RibFamily::unicast6}) {
        for (const char *text : bad) {
            RibRead read;
            std::string error;
            EXPECT_FALSE(parse_rib(text, f, &read, &error)) << text;
            EXPECT_FALSE(error.empty());
        }
        RibRead read;
        std::string error;
        EXPECT_FALSE(parse_rib(deep, f, &read, &error));
        EXPECT_FALSE(parse_rib(deep_path, f, &read, &error));
        EXPECT_NE(error.find("nested deeper"), std::string::npos) << error;
        // Paths that are not objects, or objects of anything: skipped or foreign, never a crash.
        ASSERT_TRUE(parse_rib(R"({"k": [1, "x", null, [], {}, {"nlri": 3}, {"nlri": {"value": 3}},
            {"nlri": {"prefix": "2001:db8::1/128"}, "attrs": [{"type": 8, "communities": "x"},
            {"type": 8, "communities": [-1, 4294902426]}]}]})",
                              f, &read, &error))
            << error;
    }
}

}  // namespace
}  // namespace floodgate

namespace floodgate {
namespace {

// What floodctl daemon asks gobgpd to announce, from the dataplane's replies
// (control/upstream/flowspec_desired.h): blocks first, then escalations of rules that export, as
// their rule matches; nothing an allow covers.
TEST(FlowspecDesired, BlocksThenEscalationsOfExportingRulesAndNothingAnAllowCovers) {
    const std::string text = R"(block: [198.18.77.0/24, 198.18.78.0/24]
allow: [198.18.78.0/25]
rules:
  - name: dns
    match: { proto: udp, dst_port: 53, dst: [198.18.1.1/32] }
    limit: { rate: 10/s, burst: 10 }
    escalate: { flowspec: true }
  - name: web
    match: { proto: tcp, dst_port: [80, 443] }
    limit: { rate: 10/s, burst: 10 }
    escalate: { flowspec: true }
  - name: quiet
    limit: { rate: 10/s, burst: 10 }
    escalate: {}
)";
    const nlohmann::json rules = {{"source", "rules.yaml"},
                                  {"text", text},
                                  {"doc", doc_to_json(yaml_to_doc(text, "rules.yaml"))}};
    const nlohmann::json overrides = {{"overrides",
                                       {{{"list", "block"}, {"prefix", "198.18.66.6/32"}},
                                        {{"list", "block"}, {"prefix", "198.18.66.7/32"}},
                                        {{"list", "allow"}, {"prefix", "198.18.66.7/32"}},
                                        {{"list", "allow"}, {"prefix", "198.18.90.0/24"}}}}};
    const nlohmann::json stats = {
        {"xdp",
         {{"escalations",
           {{"escalated",
             {{{"prefix", "198.18.5.5/32"}, {"rule", "dns"}, {"ttl_left_s", 30}},
              {{"prefix", "198.18.6.6/32"}, {"rule", "web"}, {"ttl_left_s", 30}},
              {{"prefix", "198.18.7.7/32"}, {"rule", "quiet"}, {"ttl_left_s", 30}},
              {{"prefix", "198.18.90.9/32"}, {"rule", "dns"}, {"ttl_left_s", 30}},
              {{"prefix", "not a prefix"}, {"rule", "dns"}},
              {{"prefix", "198.18.8.8/32"}, {"rule", "gone"}}}}}}}}};
    const std::vector<FlowspecRule> got = desired_flowspec(rules, overrides, stats);
    std::vector<std::string> words;
    for (const FlowspecRule &r : got) {
        std::string line;
        for (const std::string &w : flowspec_words(r)) line += (line.empty() ? "" : " ") + w;
        words.push_back(line);
    }
    // 198.18.78.0/24 holds an allowed /25, which the router would drop with it; 198.18.66.7/32
    // has an allow override: neither is announced.
    const std::vector<std::string> expected = {
        "match source 198.18.77.0/24 then discard",
        "match source 198.18.66.6/32 then discard",
        "match source 198.18.5.5/32 destination 198.18.1.1/32 protocol ==17 destination-port "
        "==53 then discard",
        "match source 198.18.6.6/32 protocol ==6 then discard",
    };
    EXPECT_EQ(words, expected);
    // Replies that are not what they should be announce nothing, and throw nothing.
    EXPECT_TRUE(desired_flowspec(nlohmann::json::object(), overrides, stats).empty());
    EXPECT_EQ(desired_flowspec(rules, nlohmann::json::array(), nlohmann::json(5)).size(), 1u);
}

}  // namespace
}  // namespace floodgate
