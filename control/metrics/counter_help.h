// The HELP texts of the counters named by the X-macros in dataplane/api/stats.h
// (FG_WORKER_COUNTERS, FG_RULE_COUNTERS), for the metrics (control/metrics/metrics.cpp). The metric
// names come from the X-macros; the texts cannot, so counter_help.cpp keeps a table of them
// for each list, and the build fails when the two disagree.
#pragma once

#include <string_view>

namespace floodgate {

// The text of the counter of that name, or nullptr when the list has no such counter.
const char *worker_counter_help(std::string_view name);
const char *rule_counter_help(std::string_view name);

}  // namespace floodgate
