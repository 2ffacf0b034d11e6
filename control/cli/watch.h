// `floodctl watch`: the live view, like top. Every interval it reads the dataplane's stats
// through the daemon and shows, over the interval, per rule the packets matched, passed,
// refused and answered per second with the last minute of refusals as a sparkline; per port
// rx, tx and missed per second; the table's occupancy; each rule's top refused sources with
// their count's bound and refusal rate; the merge lag.
//
// On a terminal it redraws one screen (the alternate screen, cut to the terminal's size, 80x24
// over SSH included) and exits on q or Ctrl-C, restoring the terminal. Otherwise it prints
// the same lines once per interval, without escape codes; with -j, one JSON object per line.
#pragma once

#include <string>

namespace floodgate {

struct WatchOptions {
    std::string socket;
    bool json_out = false;
    double interval_s = 1;
    std::string rule;    // only this rule (empty: all)
    unsigned top = 3;    // top refused sources per rule
    unsigned count = 0;  // frames to show, then exit (0: until q, Ctrl-C or SIGTERM)
};

int run_watch(const WatchOptions &options);

}  // namespace floodgate
