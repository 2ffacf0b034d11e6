// Which rules a packet can match, by its protocol and destination port, worked out once per
// ruleset: the per-packet rule loop walks only those candidates, so a packet costs the same
// with 1 rule as with 256 rules on other protocols or ports, where without it every rule that
// did not match cost each packet a test (bench_scaling BM_Rules, perf/RESULTS.md "Matching
// rules per packet", and perf/results/notes.md). Rules on the packet's protocol and port that
// differ only by src/dst lists, source ports or flags are still each tested.
//
// A candidate list holds, in file order, every rule whose protocol and destination ports admit
// the packet; rule_matches_rest() then checks what the index does not (source ports, TCP
// flags, src and dst lists), and rule_matches() is exactly both.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "dataplane/core/parse.h"
#include "dataplane/core/rule_match.h"

namespace floodgate {

struct RuleCandidates {
    const uint16_t *index = nullptr;  // rule indices, in file order
    unsigned count = 0;
};

class RuleIndex {
  public:
    RuleIndex() = default;
    explicit RuleIndex(const std::vector<CompiledRule> &rules);

    RuleCandidates candidates(const PacketInfo &p) const {
        uint32_t group;
        if (p.has_l4 && p.l4_proto == kProtoTcp)
            group = by_port_[0][p.dst_port];
        else if (p.has_l4 && p.l4_proto == kProtoUdp)
            group = by_port_[1][p.dst_port];
        else
            group = by_proto_[p.l4_proto];
        const Group &g = groups_[group];
        return RuleCandidates{lists_.data() + g.offset, g.count};
    }
    // Distinct candidate lists (tests, and to bound what a ruleset costs).
    size_t groups() const { return groups_.size(); }

  private:
    struct Group {
        uint32_t offset = 0;  // into lists_
        uint32_t count = 0;
    };
    uint32_t intern(const std::vector<uint16_t> &list,
                    std::map<std::vector<uint16_t>, uint32_t> *seen);

    std::vector<uint16_t> lists_;
    std::vector<Group> groups_;
    // By destination port, for packets with a TCP ([0]) or UDP ([1]) header: 2 x 256 KiB, of
    // which a flood to a few ports reads a few lines. 32-bit ids: 256 rules of 64 port ranges
    // each can make more than 2^16 distinct lists.
    std::vector<uint32_t> by_port_[2];
    // By protocol, for packets without a TCP or UDP header (ICMP, other protocols, non-first
    // fragments): only the rules that name no ports or flags can match those.
    uint32_t by_proto_[256] = {};
};

}  // namespace floodgate
