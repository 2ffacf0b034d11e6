// Payload rules through `floodgate replay`, checked frame by frame against the reference model
// (whose payload match is a byte search of its own): a DNS water-torture flood (random names
// under one domain, from many sources) held to one aggregate limit while queries for other
// names on the same port keep to their per-source limit only.
#include <gtest/gtest.h>

#include <string>

#include "tests/scenario/harness.h"
#include "tests/scenario/traffic.h"

namespace floodgate::test {
namespace {

constexpr const char *kRulesWaterTorture = R"(rules:
  # The flood: any query for a name under victim.example, limited as a whole.
  - name: water-torture
    match:
      proto: udp
      dst_port: 53
      payload: { patterns: [ { dns_suffix: victim.example } ], offset: 12 }
    key: none
    reserve: { established: 0%, verified: 0%, known: 0% }
    limit: { rate: 50/s, burst: 10 }
  # Everyone's queries, per source.
  - name: dns
    match: { proto: udp, dst_port: 53 }
    limit: { rate: 20/s, burst: 10 }
)";

// A DNS query for name: the 12-byte header, then the question.
std::vector<uint8_t> query(const std::string &name) {
    std::vector<uint8_t> q = {0xab, 0xcd, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0};
    size_t at = 0;
    while (at <= name.size()) {
        const size_t dot = std::min(name.find('.', at), name.size());
        q.push_back(static_cast<uint8_t>(dot - at));
        q.insert(q.end(), name.begin() + static_cast<std::ptrdiff_t>(at),
                 name.begin() + static_cast<std::ptrdiff_t>(dot));
        at = dot + 1;
    }
    for (uint8_t b : {0, 0, 1, 0, 1}) q.push_back(b);  // the root, type A, class IN
    return q;
}

TEST_F(Scenario, AWaterTortureFloodIsLimitedAndOtherNamesPass) {
    Traffic t;
    size_t k = 0;
    // 1,000 queries at 500/s, each from one of 400 sources, each for a new random name; some
    // in capitals (resolvers randomise the case).
    t.every(kStartNs, per_second(500), 1000, [&k](uint64_t ts) {
        const size_t n = k++;
        const std::string src =
            "198.18." + std::to_string(100 + n % 400 / 200) + "." + std::to_string(n % 200 + 1);
        Flow f = flow4(src.c_str(), kProtoUdp, 53);
        const uint64_t r = splitmix64(n);
        f.payload = query("q" + std::to_string(r % 1000000) +
                          (n % 3 == 0 ? ".VICTIM.example" : ".victim.example"));
        return make_packet(ts, f);
    });
    // Five clients asking for other names at 10/s each, one for a name that merely contains
    // the victim's.
    for (int c = 1; c <= 5; ++c) {
        Flow f = flow4(("198.18.2." + std::to_string(c)).c_str(), kProtoUdp, 53);
        f.payload =
            query(c == 5 ? "victim.example.org" : "www" + std::to_string(c) + ".other.example");
        t.every(kStartNs + ms(c), ms(100), 20, f);
    }
    ASSERT_NO_FATAL_FAILURE(
        run(kRulesWaterTorture, t.generator(PcapPrecision::nano), PcapPrecision::nano));

    const ModelRuleCounters &flood = model_->counters().rules[0];
    const ModelRuleCounters &dns = model_->counters().rules[1];
    EXPECT_EQ(flood.matched, 1000u);  // every flood query, none of the clients'
    EXPECT_GT(flood.refused, 800u);   // 50/s + 10 of 500/s for 2 s
    for (int c = 1; c <= 5; ++c)
        EXPECT_EQ(refused_for(dns, key_of(4, a4(("198.18.2." + std::to_string(c)).c_str()), 32)),
                  0u);
}

}  // namespace
}  // namespace floodgate::test
