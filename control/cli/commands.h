// floodctl's commands that ask the daemon (and `rules check`, which validates locally), once
// the command line (control/main/command_line.cpp) has read and checked their arguments: each sends
// one request and prints the answer for people or, with json_out, as JSON. Each returns the exit
// code: 0 done, 1 refused or failed (the reason on stderr).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace floodgate {

// Where the daemon is and how answers are printed (floodctl's global options).
struct Ctl {
    std::string socket;
    bool json_out = false;

    // One request to the daemon (control/client/daemon_client.h).
    bool ask(const nlohmann::json &request, nlohmann::json *reply) const;
};

int cmd_status(const Ctl &ctl);
int cmd_rules_check(const Ctl &ctl, const std::string &path);
int cmd_rules_load(const Ctl &ctl, const std::string &path, bool dry_run);
int cmd_rules_show(const Ctl &ctl);
int cmd_stats(const Ctl &ctl, const std::string &rule);       // rule empty: every rule
int cmd_nic(const Ctl &ctl);                                  // the NIC tier's rules and counters
int cmd_top(const Ctl &ctl, const std::string &rule, int n);  // n: sources per rule
// top --dst (top_destinations.cpp): n destinations per rule.
int cmd_top_destinations(const Ctl &ctl, const std::string &rule, int n);
// list: "block" or "allow".
int cmd_override_list(const Ctl &ctl, const std::string &list);
// verb: "add" or "del"; prefix as typed (already checked); ttl_s only with add.
int cmd_override(const Ctl &ctl, const std::string &list, const std::string &verb,
                 const std::string &prefix, std::optional<long long> ttl_s);
int cmd_rule_mode(const Ctl &ctl, const std::string &rule, const std::string &mode);

}  // namespace floodgate
