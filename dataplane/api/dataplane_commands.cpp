#include "dataplane/api/dataplane_commands.h"

#include "dataplane/api/control_protocol.h"

namespace floodgate {

namespace {

constexpr const char *kNames[] = {
#define FG_DATAPLANE_COMMAND_NAME(name, request) #name,
    FG_DATAPLANE_COMMANDS(FG_DATAPLANE_COMMAND_NAME)
#undef FG_DATAPLANE_COMMAND_NAME
};

}  // namespace

const char *command_name(DataplaneCommand command) {
    return kNames[static_cast<size_t>(command)];
}

std::optional<DataplaneCommand> parse_dataplane_command(std::string_view name) {
    for (size_t i = 0; i < std::size(kNames); ++i)
        if (name == kNames[i]) return static_cast<DataplaneCommand>(i);
    return std::nullopt;
}

nlohmann::json dataplane_request(DataplaneCommand command, nlohmann::json fields) {
    fields[kCommandField] = command_name(command);
    return fields;
}

}  // namespace floodgate
