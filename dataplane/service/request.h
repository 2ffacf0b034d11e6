// One control-protocol request line decoded into the typed request its command names in
// FG_DATAPLANE_COMMANDS (dataplane/api/dataplane_commands.h), every field parsed and range-checked,
// apart from the Service that executes it. Decoding is a pure function of the line that needs no
// EAL and no service state, so it is unit-tested and fuzzed on its own
// (tests/fuzz/fuzz_control.cpp); what depends on the running state (is there a rule of that name,
// an override on that prefix) is checked on execution.
#pragma once

#include <string>
#include <variant>

#include "dataplane/api/dataplane_commands.h"
#include "dataplane/api/prefix.h"
#include "dataplane/api/rules.h"
#include "dataplane/core/ruleset.h"
#include "dataplane/service/cluster_link.h"
#include "rules/load.h"

namespace floodgate {

struct StatusRequest {};
struct RulesRequest {};
struct OverridesRequest {};

struct StatsRequest {
    unsigned top = 0;  // top refused sources per rule, 1 to HeavyHitters::kCounters
};

// {source, text, rules} whose rules validated: the rules file as it would run.
struct LoadRequest {
    RulesFile rules;
    // Payload rules whose database came compiled in the request (the others were compiled
    // here), for the reply.
    size_t payload_precompiled = 0;
    size_t payload_compiled = 0;
};

// A load whose rules were refused. Not a malformed message: the reply names the file, line and
// field, and the service counts a failed reload rather than a refused request.
struct RefusedLoadRequest {
    ConfigError error;
};

struct ModeRequest {
    std::string rule;
    RuleMode mode = RuleMode::enforce;
};

struct OverrideAddRequest {
    PrefixVerdict list = PrefixVerdict::block;  // allow or block
    Prefix prefix;
    long long ttl_s = 0;  // 0 to kMaxOverrideTtlSeconds; 0: never expires
};

struct ClusterTakeRequest {};

struct OverrideDelRequest {
    PrefixVerdict list = PrefixVerdict::block;  // allow or block
    Prefix prefix;
};

// Each command's request, and a load refused for its rules.
#define FG_SERVICE_REQUEST_TYPE(name, request) request,
using ServiceRequest =
    std::variant<FG_DATAPLANE_COMMANDS(FG_SERVICE_REQUEST_TYPE) RefusedLoadRequest>;
#undef FG_SERVICE_REQUEST_TYPE

// Throws MessageError (dataplane/api/message.h), whose text is sent back as the error, for a
// line that is not a request of the protocol. Fields are checked in the order the protocol
// lists them, so the first problem is the one reported.
ServiceRequest decode_service_request(const std::string &line);

}  // namespace floodgate
