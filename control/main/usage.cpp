#include "control/main/usage.h"

#include <cstdio>

#include "control/cli/xdp_cli.h"

namespace floodgate {

namespace {

// Each command's usage, shown alone with its usage errors and all together by --help.
struct CommandUsage {
    const char *name;
    const char *text;
};
constexpr CommandUsage kCommands[] = {
    {"daemon",
     "  daemon --config RULES.yaml [--dataplane SOCKET] [--metrics HOST:PORT|none]\n"
     "         [--web-config-file FILE] [--nic-top-rules N]\n"
     "         [--box ID] [--redis HOST:PORT] [--redis-user NAME --redis-password-file FILE]\n"
     "         [--redis-tls-ca FILE [--redis-tls-name NAME]\n"
     "          [--redis-tls-cert FILE --redis-tls-key FILE]] [--cluster-key-file FILE]\n"
     "         [--flowspec HOST:PORT [--flowspec-max N] [--flowspec-rate N] [--rtbh]\n"
     "          [--flowspec-min-source4 LEN] [--flowspec-min-source6 LEN]\n"
     "          [--flowspec-never-block PREFIX]...]\n"
     "                         run the control plane (socket /run/floodgate/floodctl.sock),\n"
     "                         its metrics in TLS and behind basic auth as FILE says;\n"
     "                         with a cluster section, sync shared rules as box ID (default\n"
     "                         the host name) through Redis (default the rules file's),\n"
     "                         logged in as an ACL user (the password: FILE, or systemd's\n"
     "                         credential redis-password), in TLS verified against a CA;\n"
     "                         entries signed and checked with the key(s) in the key file;\n"
     "                         with --flowspec, announce blocks and escalations upstream\n"
     "                         through the local gobgpd's API (default at most 1000, 20 new/s),\n"
     "                         never a source shorter than /16 (IPv6 /32) or overlapping a\n"
     "                         --flowspec-never-block prefix\n"},
    {"status", "  status                 dataplane, ruleset, rates, table occupancy\n"},
    {"watch",
     "  watch [--interval SECONDS] [--rule NAME] [-n N] [--count FRAMES]\n"
     "                         the live view: rates per rule and port, top refused sources;\n"
     "                         q or Ctrl-C quits (default every 1 s, 3 sources per rule)\n"},
    {"rules",
     "  rules check FILE       validate only; exit 0 when valid\n"
     "  rules load FILE [--dry-run]\n"
     "                         validate, show the difference, apply atomically\n"
     "  rules show             the running rules\n"},
    {"stats", "  stats [--rule NAME]    counters, per rule\n"},
    {"nic", "  nic                    the NIC tier's rte_flow rules, their drops, its counters\n"},
    {"top",
     "  top [--rule NAME] [-n N] [--dst]\n"
     "                         the sources (for key dst: destinations) refused most\n"
     "                         (N up to 64, default 10); --dst: the destinations nearest\n"
     "                         their limit or far over their baseline (LOAD HIGH: over\n"
     "                         4 times it with almost nothing refused; N up to 32)\n"},
    {"block", "  block add PREFIX [--ttl DURATION] | block del PREFIX | block list\n"},
    {"allow",
     "  allow add PREFIX [--ttl DURATION] | allow del PREFIX | allow list\n"
     "                         runtime overrides; DURATION like 90s, 15m, 2h, 1d, 1h30m\n"
     "                         (a unit on every number: a bare 15 is refused)\n"},
    {"rule",
     "  rule NAME shadow|enforce\n"
     "                         switch one rule between shadow and enforce\n"},
    {"xdp", kXdpUsage},
};
constexpr const char *kUsageHead = "usage: floodctl [--socket PATH] [-j|--json] COMMAND\n";

}  // namespace

std::string usage_text() {
    std::string s = kUsageHead;
    for (const CommandUsage &c : kCommands) s += c.text;
    return s + "  --version              floodctl's version\n";
}

// The error, then the usage of the one command it is about (all of them when there is none).
int usage_error(const std::string &command, const std::string &why) {
    std::fprintf(stderr, "floodctl: %s\n", why.c_str());
    for (const CommandUsage &c : kCommands)
        if (command == c.name) {
            std::fprintf(stderr, "usage: floodctl [--socket PATH] [-j] ...\n%s", c.text);
            return 2;
        }
    std::fputs(usage_text().c_str(), stderr);
    return 2;
}

}  // namespace floodgate
