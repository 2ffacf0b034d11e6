#include "dataplane/service/sampled_refusals.h"

namespace floodgate {

void SampledRefusals::add(const std::vector<RefusedSource> &samples, uint64_t now_ns) {
    for (const RefusedSource &s : samples) {
        auto key = std::make_pair(s.rule, s.key);
        auto it = counts_.find(key);
        if (it == counts_.end()) {
            if (counts_.size() == kMaxSources) {
                ++untracked_;
                continue;
            }
            it = counts_.emplace(std::move(key), Count{}).first;
        }
        it->second.refused += s.refused;
        it->second.last_ns = now_ns;
    }
}

std::vector<RefusedSource> SampledRefusals::counts(uint64_t now_ns) {
    std::vector<RefusedSource> out;
    out.reserve(counts_.size());
    for (auto it = counts_.begin(); it != counts_.end();) {
        if (now_ns - it->second.last_ns >= kForgetNs) {
            it = counts_.erase(it);
            continue;
        }
        out.push_back({it->first.first, it->first.second, it->second.refused});
        ++it;
    }
    return out;
}

}  // namespace floodgate
