#include "dataplane/api/dataplane_commands.h"

#include "dataplane/api/control_protocol.h"

namespace floodgate {

namespace {

constexpr const char *kDataplaneNames[] = {
#define FG_DATAPLANE_COMMAND_NAME(name, request) #name,
    FG_DATAPLANE_COMMANDS(FG_DATAPLANE_COMMAND_NAME)
#undef FG_DATAPLANE_COMMAND_NAME
};

}  // namespace

const char *command_name(DataplaneCommand command) {
    return kDataplaneNames[static_cast<size_t>(command)];
}

std::optional<DataplaneCommand> parse_dataplane_command(std::string_view name) {
    return command_named<DataplaneCommand>(kDataplaneNames, name);
}

nlohmann::json dataplane_request(DataplaneCommand command, nlohmann::json fields) {
    fields[kCommandField] = command_name(command);
    return fields;
}

}  // namespace floodgate
