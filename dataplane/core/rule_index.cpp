#include "dataplane/core/rule_index.h"

#include <algorithm>
#include <map>

namespace floodgate {

namespace {
bool proto_admits(const CompiledRule &r, uint8_t proto) {
    return !r.has_proto || r.proto == proto;
}
}  // namespace

uint32_t RuleIndex::intern(const std::vector<uint16_t> &list,
                           std::map<std::vector<uint16_t>, uint32_t> *seen) {
    auto [it, added] = seen->try_emplace(list, static_cast<uint32_t>(groups_.size()));
    if (added) {
        groups_.push_back(
            Group{static_cast<uint32_t>(lists_.size()), static_cast<uint32_t>(list.size())});
        lists_.insert(lists_.end(), list.begin(), list.end());
    }
    return it->second;
}

RuleIndex::RuleIndex(const std::vector<CompiledRule> &rules) {
    std::map<std::vector<uint16_t>, uint32_t> seen;
    std::vector<uint16_t> list;
    for (unsigned proto = 0; proto < 256; ++proto) {
        list.clear();
        for (const CompiledRule &r : rules)
            if (proto_admits(r, static_cast<uint8_t>(proto)) && !r.ports_need_l4)
                list.push_back(r.index);
        by_proto_[proto] = intern(list, &seen);
    }

    // Between two consecutive boundaries of the rules' destination port ranges every port has
    // the same candidates: a sweep over the boundaries (a range opens at lo, closes after hi)
    // keeps how many of each rule's ranges cover the port, and makes one list per interval.
    struct Edge {
        uint32_t port;
        int delta;  // +1: a range of the rule opens here; -1: one closes
        uint16_t rule;
    };
    std::vector<Edge> edges;
    for (const CompiledRule &r : rules)
        for (const PortRange &pr : r.dst_ports) {
            edges.push_back(Edge{pr.lo, +1, r.index});
            edges.push_back(Edge{uint32_t{pr.hi} + 1, -1, r.index});
        }
    std::sort(edges.begin(), edges.end(),
              [](const Edge &a, const Edge &b) { return a.port < b.port; });
    std::vector<int> covering(rules.size(), 0);
    const uint8_t l4[2] = {kProtoTcp, kProtoUdp};
    for (unsigned t = 0; t < 2; ++t) by_port_[t].assign(65536, 0);
    size_t next = 0;
    uint32_t port = 0;
    while (port < 65536) {
        for (; next < edges.size() && edges[next].port == port; ++next)
            covering[edges[next].rule] += edges[next].delta;
        const uint32_t end = next < edges.size() ? edges[next].port : 65536;
        for (unsigned t = 0; t < 2; ++t) {
            list.clear();
            for (const CompiledRule &r : rules)
                if (proto_admits(r, l4[t]) && (r.dst_ports.empty() || covering[r.index] > 0))
                    list.push_back(r.index);
            std::fill(by_port_[t].begin() + port, by_port_[t].begin() + end, intern(list, &seen));
        }
        port = end;
    }
}

}  // namespace floodgate
