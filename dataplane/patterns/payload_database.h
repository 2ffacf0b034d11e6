// A rule's payload patterns (match.payload) compiled with Hyperscan in block mode: one database
// per distinct pattern list (rules that share a list share it), every pattern with
// HS_FLAG_SINGLEMATCH (the rule only needs to know that one matched); Hyperscan's literal API
// when the list has no regex (cheaper matches). Compiled where the rules are validated
// (rules/validate_match.cpp), within the ruleset's budget (compile_budget.h), so a bad pattern
// is refused with its file, line, field and index and Hyperscan's own message, and handed on
// with the rules to RuleSet::build, which gives each worker core a scratch space for it.
//
// Refused: a pattern that can match an empty buffer (it would match every packet; Hyperscan
// says so), more than kMaxPayloadPatterns patterns, a pattern longer than
// kMaxPayloadPatternBytes, a database over kMaxPayloadDatabaseBytes. Built without Hyperscan
// (or Vectorscan), every payload rule is refused with a message saying so.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "dataplane/api/rules.h"

struct hs_database;
struct hs_scratch;

namespace floodgate {

class PayloadDatabase {
  public:
    // nullptr with *error and *bad_pattern (the index of the pattern Hyperscan refused, -1 for
    // the set as a whole).
    static std::shared_ptr<const PayloadDatabase> compile(
        const std::vector<PayloadPattern> &patterns, std::string *error, int *bad_pattern);
    ~PayloadDatabase();
    PayloadDatabase(const PayloadDatabase &) = delete;
    PayloadDatabase &operator=(const PayloadDatabase &) = delete;

    // The database as bytes (hs_serialize_database), for a load request to carry to the
    // dataplane, and back; deserialize refuses bytes that are not a database for this CPU
    // and Hyperscan version (the dataplane compiles the patterns itself then).
    std::string serialize() const;
    static std::shared_ptr<const PayloadDatabase> deserialize(const std::string &bytes,
                                                              std::string *error);

    const hs_database *database() const { return db_; }
    size_t bytes() const { return bytes_; }

  private:
    PayloadDatabase() = default;
    hs_database *db_ = nullptr;
    size_t bytes_ = 0;
};

// A rule's patterns as a short text that changes with any pattern, flag or the engine's
// version (FNV-1a 64 over them, hex): a load request sends it with each compiled database, and
// the dataplane takes a database only if its own reading of the patterns gives the same. A
// check against mix-ups (another version, another rule), not a signature: the socket is the
// root's.
std::string payload_fingerprint(const std::vector<PayloadPattern> &patterns);

// Compiled databases by rule index (a load request's, deserialized) with the fingerprint they
// were sent with: the validator takes a rule's database from here instead of compiling its
// patterns again, when the fingerprints agree.
struct PrecompiledPayload {
    std::shared_ptr<const PayloadDatabase> database;
    std::string fingerprint;
};
using PrecompiledPayloads = std::map<size_t, PrecompiledPayload>;

// Per-core scratch spaces big enough for every database given (hs_alloc_scratch, then
// hs_clone_scratch per core), allocated off the hot path; freed with the object.
class PayloadScratch {
  public:
    static std::unique_ptr<PayloadScratch> create(
        const std::vector<const PayloadDatabase *> &databases, unsigned cores, std::string *error);
    ~PayloadScratch();
    hs_scratch *core(unsigned i) const { return i < per_core_.size() ? per_core_[i] : nullptr; }

  private:
    std::vector<hs_scratch *> per_core_;
};

// Whether this build has a pattern engine; its name and version for messages.
bool payload_engine_available();
std::string payload_engine_version();

// A domain ("victim.example") to its DNS label encoding ("\x06victim\x07example\x00"); false
// with *why.
bool dns_labels(const std::string &domain, std::string *labels, std::string *why);

}  // namespace floodgate
