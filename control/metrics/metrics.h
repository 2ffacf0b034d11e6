// The Prometheus text exposition (format 0.0.4) that `floodctl daemon` serves: built from the
// dataplane's status, stats and overrides replies (dataplane/api/control_protocol.h) and the
// daemon's own counters. A plain function over JSON, so it is unit-tested without a dataplane.
//
// The replies come from another process: a missing field or one of the wrong type drops that
// sample, never throws.
//
// Which families are written depends on which replies came, never on the traffic: every
// family a reply feeds is written, with its HELP and TYPE lines, as soon as that reply is an
// object, even when it has no sample (no rule, no top refused source yet, an error reply).
// A reply that did not come (dataplane down) writes none of its families: no number is better
// than a made-up one. floodgate_malformed_by_reason_total has a sample for every reason of
// FG_MALFORMED_REASONS (dataplane/api/malformed.h) but "none" from the first scrape, 0 for a reason
// the stats' malformed_reasons object leaves out; floodgate_overrides has both lists, 0 when
// empty. Other counters are written for each core, rule, port or direction the reply lists,
// which the dataplane lists from its start, every counter of each. Metric names are stable;
// each is documented in its HELP line.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "control/metrics/web_auth.h"

namespace floodgate {

inline constexpr size_t kDefaultNicTopRules = 20;

struct MetricsInput {
    bool dataplane_up = false;
    const nlohmann::json *status = nullptr;     // dataplane status reply, or null
    const nlohmann::json *stats = nullptr;      // the "stats" object of the stats reply, or null
    const nlohmann::json *overrides = nullptr;  // dataplane overrides reply, or null
    uint64_t dataplane_connects = 0;            // daemon's own counter: successful (re)connections
    const nlohmann::json *cluster = nullptr;    // the daemon's cluster sync (ClusterSync::status)
    const nlohmann::json *flowspec = nullptr;   // its FlowSpec feed (FlowspecFeed::status), if any
    // The endpoint's own refusals, when a web config asks for credentials (none: not written).
    std::optional<AuthRefusals> auth_refusals;
    // The NIC tier's rules with most hits that get series of their own (floodctl daemon
    // --nic-top-rules; at most kNicTopRules, dataplane/api/nic_stats.h).
    size_t nic_top_rules = kDefaultNicTopRules;
};

// The whole scrape body, every line ending in "\n". floodgate_dataplane_up and
// floodgate_control_dataplane_connects_total are always present.
std::string prometheus_text(const MetricsInput &in);

}  // namespace floodgate
