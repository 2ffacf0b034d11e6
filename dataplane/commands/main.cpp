// floodgate: an inline edge flood filter. This file only dispatches subcommands.
#include <cstdio>
#include <cstring>

#include "dataplane/commands/commands.h"

namespace {
void usage(std::FILE *to) {
    std::fputs(
        "usage: floodgate COMMAND [OPTIONS]\n"
        "commands:\n"
        "  run      filter live traffic on DPDK ports: floodgate run [EAL options] -- --config\n"
        "           RULES.yaml [...]; see floodgate run --help\n"
        "  replay   run the rules over a pcap offline (dry run, tests); see floodgate replay "
        "--help\n"
        "  probe    what floodgate could do with each port (RSS, rte_flow, steering, tiers):\n"
        "           floodgate probe [EAL options] -- [--json] [PORT...]\n"
        "  --version\n",
        to);
}
}  // namespace

int main(int argc, char **argv) {
    if (argc < 2) {
        std::fputs("floodgate: no command\n", stderr);
        usage(stderr);
        return 2;
    }
    if (std::strcmp(argv[1], "replay") == 0) return floodgate::replay_main(argc - 1, argv + 1);
    if (std::strcmp(argv[1], "run") == 0) return floodgate::run_main(argc - 1, argv + 1);
    if (std::strcmp(argv[1], "probe") == 0) return floodgate::probe_main(argc - 1, argv + 1);
    if (std::strcmp(argv[1], "--version") == 0) {
        std::printf("floodgate %s\n", FG_VERSION);
        return 0;
    }
    if (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
        usage(stdout);
        return 0;
    }
    std::fprintf(stderr, "floodgate: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
