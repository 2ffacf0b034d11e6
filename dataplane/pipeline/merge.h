// Cross-core merge: every core's consumption since the last merge (keys and admitted packet
// counts, from Pipeline::publish) is charged to every other core's TATs (Pipeline::apply), so
// a key whose packets land on several cores is held to its limit across them, within a bound
// that grows with the merge interval (README, "Several cores").
#pragma once

#include <cstdint>
#include <vector>

#include "dataplane/pipeline/pipeline.h"

namespace floodgate {

// Merges the cores at now_ns, in one thread (replay). scratch is reused between calls.
void merge_cores(const std::vector<Pipeline *> &cores, uint64_t now_ns,
                 std::vector<Consumption> *scratch);

}  // namespace floodgate
