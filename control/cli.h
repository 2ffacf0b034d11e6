// The floodctl command line: parses the arguments, sends one request to the daemon (or, for
// `rules check`, validates locally) and prints the answer for people or, with -j, as JSON.
// Exit codes: 0 done, 1 refused or failed (the reason on stderr), 2 usage error.
#pragma once

namespace floodgate {

int floodctl_main(int argc, char **argv);

}  // namespace floodgate
