// Longest-prefix-match classification of an address, for the allow/block lists and for the
// rules' src and dst lists at once, in DPDK's rte_fib (IPv4, DIR24_8) and rte_fib6 (TRIE) or
// rte_lpm6 (IPv6, whichever the prefixes need less memory in): one
// lookup per packet and direction, done for a whole burst in one call, whatever the
// number of prefixes or rules (a linear scan of a rule's list cost every packet each prefix of
// it; 100,000 made every packet pay 100,000 compares).
//
// Why rte_fib rather than rte_lpm: rte_lpm keeps its rules in a sorted array and scans it on
// every add, so building grows with the square of the prefixes, and every reload pays it
// again, where rte_fib keeps its rules in a trie; and rte_fib looks up a burst of addresses in
// one call, where rte_lpm_lookup takes one address a call (both timed: perf/results/notes.md).
//
// Each prefix's next hop says everything about the addresses whose longest match it is: the
// allow/block verdict of their longest allow or block prefix, and the set of rules that list a
// prefix holding them (interned RuleBits). Built shortest prefixes first, each inheriting from
// its longest ancestor already in the table, so that a nested prefix of one list keeps what an
// enclosing prefix of another list says.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dataplane/api/prefix.h"
#include "dataplane/api/rules.h"

struct rte_fib;
struct rte_fib6;
struct rte_lpm6;

namespace floodgate {

enum class PrefixVerdict : uint8_t { none, allow, block };

// One bit per rule of a RuleSet (by index).
struct RuleBits {
    uint64_t word[kMaxRules / 64] = {};
    bool test(unsigned rule) const { return (word[rule / 64] >> (rule % 64) & 1) != 0; }
    void set(unsigned rule) { word[rule / 64] |= uint64_t{1} << (rule % 64); }
    bool operator<(const RuleBits &o) const;
    bool operator==(const RuleBits &) const = default;
};

// What a table says of one address.
struct PrefixClass {
    PrefixVerdict verdict = PrefixVerdict::none;
    const RuleBits *rules = nullptr;  // never null: the empty set when no rule lists it
};

class PrefixTable {
  public:
    // One prefix of one list. Several entries may name the same prefix: their rules add up,
    // and a later verdict replaces an earlier one (an override replaces the file's entry).
    struct Entry {
        Prefix prefix;
        PrefixVerdict verdict = PrefixVerdict::none;  // none: a rule's entry only
        int rule = -1;                                // -1: an allow/block entry only
    };

    // Needs the EAL (the tables live in DPDK memory on socket_id). Returns false with *error
    // when a table cannot be built (out of DPDK memory, too many distinct rule sets).
    bool build(const std::vector<Entry> &entries, int socket_id, std::string *error);
    PrefixTable() : sets_{std::vector<RuleBits>(1), std::vector<RuleBits>(1)} {}
    ~PrefixTable();
    PrefixTable(const PrefixTable &) = delete;
    PrefixTable &operator=(const PrefixTable &) = delete;

    // Classifies n addresses (n <= kMaxBulk) of one family in one lookup call: addrs[k]
    // points at 16 bytes in network order (IPv4 in the first 4), as in PacketInfo.
    static constexpr unsigned kMaxBulk = 32;
    void classify(uint8_t family, const uint8_t *const *addrs, unsigned n, PrefixClass *out) const;
    PrefixClass classify(uint8_t family, const uint8_t *addr) const {
        PrefixClass c;
        classify(family, &addr, 1, &c);
        return c;
    }
    // True when every address gets the empty answer (no lookup needed).
    bool empty() const {
        return fib4_ == nullptr && fib6_ == nullptr && lpm6_ == nullptr && miss6_ == 0;
    }

    // DPDK memory the tables of these entries take (the EAL must be given at least this), with
    // room for `extra` more prefixes of each family, each as long as it can be.
    static uint64_t dpdk_memory_bytes(const std::vector<Entry> &entries, size_t extra = 0);

  private:
    rte_fib *fib4_ = nullptr;
    rte_fib6 *fib6_ = nullptr;  // or lpm6_, or neither
    rte_lpm6 *lpm6_ = nullptr;
    // rte_fib takes /0 as a route; rte_lpm6 does not, so an IPv6 /0 sets what a miss means.
    uint64_t miss6_ = 0;
    // By family (IPv4, IPv6), by id; [0] is the empty set, which a miss gets.
    std::vector<RuleBits> sets_[2];
};

}  // namespace floodgate
