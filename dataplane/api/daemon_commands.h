// The daemon's commands (floodctl CLI -> floodctl daemon, on its own socket), listed once as
// the dataplane's are (dataplane/api/dataplane_commands.h): its own, and the dataplane's that it
// passes on as they come.
//
//   status       daemon and dataplane state, per-port rates, table occupancy
//   rules_load   {source, text, dry_run}: validate, diff against the running rules, apply
//   rules, stats, overrides, mode, override_add, override_del: passed to the dataplane; after
//                one that changes the dataplane's state, the daemon reads that state again
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "dataplane/api/dataplane_commands.h"

namespace floodgate {

#define FG_DAEMON_COMMANDS(X) \
    X(status)                 \
    X(rules_load)

// The dataplane's commands the daemon passes on, and whether each reads or changes its state.
#define FG_DAEMON_PASSED_COMMANDS(X) \
    X(rules, reads)                  \
    X(stats, reads)                  \
    X(overrides, reads)              \
    X(mode, changes)                 \
    X(override_add, changes)         \
    X(override_del, changes)

enum class DaemonCommand : uint8_t {
#define FG_DAEMON_COMMAND_ENUM(name) name,
    FG_DAEMON_COMMANDS(FG_DAEMON_COMMAND_ENUM)
#undef FG_DAEMON_COMMAND_ENUM
};

enum class PassedCommand : uint8_t { reads, changes };

const char *command_name(DaemonCommand command);
// The daemon's own command of that name (its own come first: its status is not the
// dataplane's), and else the dataplane's command it passes on.
std::optional<DaemonCommand> parse_daemon_command(std::string_view name);
std::optional<PassedCommand> passed_to_dataplane(DataplaneCommand command);

// The request line's object: {"cmd": name} with the request's fields.
nlohmann::json daemon_request(DaemonCommand command,
                              nlohmann::json fields = nlohmann::json::object());

}  // namespace floodgate
