// The floodctl command line (CLI11): the global options, the command and its arguments, each
// checked before anything is asked of the daemon; then the command (control/cli/commands.h,
// daemon.h, watch.h, xdp_cli.h). Exit codes: 0 done, 1 refused or failed (the reason on
// stderr), 2 usage error (the reason, then the command's usage, on stderr).
#pragma once

namespace floodgate {

int floodctl_main(int argc, char **argv);

}  // namespace floodgate
