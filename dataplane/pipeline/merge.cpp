#include "dataplane/pipeline/merge.h"

#include "dataplane/pipeline/pipeline.h"

namespace floodgate {

void merge_cores(const std::vector<Pipeline *> &cores, uint64_t now_ns,
                 std::vector<Consumption> *scratch) {
    scratch->clear();
    std::vector<size_t> start(cores.size() + 1, 0);
    for (size_t c = 0; c < cores.size(); ++c) {
        start[c] = scratch->size();
        cores[c]->publish(scratch);
    }
    start[cores.size()] = scratch->size();
    for (size_t to = 0; to < cores.size(); ++to)
        for (size_t from = 0; from < cores.size(); ++from)
            if (from != to)
                for (size_t i = start[from]; i < start[from + 1]; ++i)
                    cores[to]->apply((*scratch)[i], now_ns);
}

}  // namespace floodgate
