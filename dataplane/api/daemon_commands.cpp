#include "dataplane/api/daemon_commands.h"

#include "dataplane/api/control_protocol.h"

namespace floodgate {

namespace {

constexpr const char *kDaemonNames[] = {
#define FG_DAEMON_COMMAND_NAME(name) #name,
    FG_DAEMON_COMMANDS(FG_DAEMON_COMMAND_NAME)
#undef FG_DAEMON_COMMAND_NAME
};

}  // namespace

const char *command_name(DaemonCommand command) {
    return kDaemonNames[static_cast<size_t>(command)];
}

std::optional<DaemonCommand> parse_daemon_command(std::string_view name) {
    return command_named<DaemonCommand>(kDaemonNames, name);
}

std::optional<PassedCommand> passed_to_dataplane(DataplaneCommand command) {
    switch (command) {
#define FG_DAEMON_PASSED_CASE(name, kind) \
    case DataplaneCommand::name:          \
        return PassedCommand::kind;
        FG_DAEMON_PASSED_COMMANDS(FG_DAEMON_PASSED_CASE)
#undef FG_DAEMON_PASSED_CASE
        default:
            return std::nullopt;
    }
}

nlohmann::json daemon_request(DaemonCommand command, nlohmann::json fields) {
    fields[kCommandField] = command_name(command);
    return fields;
}

}  // namespace floodgate
