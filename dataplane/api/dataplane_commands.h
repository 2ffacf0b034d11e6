// The dataplane's commands (floodctl daemon -> floodgate run), listed once: the enum, the names
// on the wire, the requests floodctl builds and the table the dataplane decodes with
// (dataplane/service/request.h) all come from FG_DATAPLANE_COMMANDS, as grout's GR_REQ names
// each request with its typed struct. The second column is the typed request the dataplane
// decodes a line into; those types hold the dataplane's own models (a load's RulesFile), so they
// are defined in dataplane/service/request.h, and only named here.
//
//   status | stats {top} | rules | overrides
//   load         {source, text, rules, payload_databases}: a whole rules file: rules is its
//                document in JSON (rules/doc.h), validated again there; text is kept only to
//                show people. Refused as a whole, with file: field
//   mode         {rule, mode: "shadow"|"enforce"}
//   override_add {list: "allow"|"block", prefix, ttl_s (0 or absent: never expires)}
//   override_del {list, prefix}
//   cluster_take | cluster_sync {store_ok, boxes, escalations, charges}: the cluster's sync
//                (control/cluster_sync.h)
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

namespace floodgate {

#define FG_DATAPLANE_COMMANDS(X)        \
    X(status, StatusRequest)            \
    X(stats, StatsRequest)              \
    X(rules, RulesRequest)              \
    X(overrides, OverridesRequest)      \
    X(load, LoadRequest)                \
    X(mode, ModeRequest)                \
    X(override_add, OverrideAddRequest) \
    X(override_del, OverrideDelRequest) \
    X(cluster_take, ClusterTakeRequest) \
    X(cluster_sync, ClusterSyncRequest)

enum class DataplaneCommand : uint8_t {
#define FG_DATAPLANE_COMMAND_ENUM(name, request) name,
    FG_DATAPLANE_COMMANDS(FG_DATAPLANE_COMMAND_ENUM)
#undef FG_DATAPLANE_COMMAND_ENUM
};

// The name on the wire, and back (nullopt: no such command).
const char *command_name(DataplaneCommand command);
std::optional<DataplaneCommand> parse_dataplane_command(std::string_view name);

// The command of list E whose name is `name`, names being E's in E's order (the daemon's list
// reads its names the same way).
template <class E, size_t N>
std::optional<E> command_named(const char *const (&names)[N], std::string_view name) {
    for (size_t i = 0; i < N; ++i)
        if (name == names[i]) return static_cast<E>(i);
    return std::nullopt;
}

// The request line's object: {"cmd": name} with the request's fields.
nlohmann::json dataplane_request(DataplaneCommand command,
                                 nlohmann::json fields = nlohmann::json::object());

}  // namespace floodgate
