#include "dataplane/replay/boxes.h"

namespace floodgate {

BoxesSync::BoxesSync(const Config &config, const BoxesOptions &options, const RuleSetOptions &base,
                     std::string *error)
    : config_(config), options_(options), base_(base), untold_(options.boxes) {
    if (options_.sync_ns == 0) options_.sync_ns = config.cluster.sync_ns;
    state_ = ClusterState(cluster_options(), 0);
    Config adjusted = config_;
    state_.adjust(&adjusted);
    rules_ = RuleSet::build(adjusted, base_, error);
}

ClusterOptions BoxesSync::cluster_options() const {
    ClusterOptions c = config_.cluster;
    c.set = true;
    c.sync_ns = options_.sync_ns;
    c.boxes = options_.boxes;  // before the first sync: the boxes there are
    return c;
}

void BoxesSync::start(const std::vector<Pipeline *> &boxes, uint64_t first_ns) {
    boxes_ = boxes;
    first_ns_ = first_ns;
    state_ = ClusterState(cluster_options(), first_ns);
    next_sync_ns_ = first_ns + options_.sync_ns;
}

bool BoxesSync::store_up(uint64_t now_ns) const {
    const uint64_t t = now_ns - first_ns_;
    return !(t >= options_.down_from_ns && t < options_.down_until_ns);
}

bool BoxesSync::sync(std::string *error) {
    const uint64_t now = next_sync_ns_;
    next_sync_ns_ += options_.sync_ns;
    // What each box admitted since the last sync. Admitted while the box was alone for the
    // whole interval, it was within the box's share and is not told (the live service does the
    // same): telling it after a return would charge the others for the whole outage at once.
    std::vector<SharedRecord> records;
    for (size_t b = 0; b < boxes_.size(); ++b) {
        records.clear();
        boxes_[b]->take_shared(&records);
        if (joined_since_last_) {
            add_shared_totals(*rules_, records, &untold_[b]);
        } else {
            for (const SharedRecord &r : records) dropped_alone_ += r.packets;
        }
    }
    const bool up = store_up(now);
    if (up) {
        // Every box's deltas into the store, and each box charged the others'.
        std::vector<Consumption> charges;
        std::string why;
        for (size_t to = 0; to < boxes_.size(); ++to) {
            charges.clear();
            for (size_t from = 0; from < boxes_.size(); ++from) {
                if (from == to) continue;
                for (const auto &[key, packets] : untold_[from]) {
                    if (!shared_charges(*rules_, key.first, key.second, packets,
                                        boxes_[to]->table(), &charges, &why))
                        ++refused_;
                    else
                        charged_ += packets;
                }
            }
            for (const Consumption &c : charges) boxes_[to]->apply(c, now);
        }
        for (SharedTotals &t : untold_) {
            told_ += t.size();
            t.clear();
        }
    }
    const bool changed = state_.on_sync(up, static_cast<uint32_t>(boxes_.size()), now);
    joined_since_last_ = state_.joined();
    if (!changed) return true;
    Config adjusted = config_;
    state_.adjust(&adjusted);
    RuleSetOptions options = base_;
    options.previous = rules_.get();
    options.version = rules_->version() + 1;
    std::unique_ptr<RuleSet> next = RuleSet::build(adjusted, options, error);
    if (!next) return false;
    for (Pipeline *box : boxes_) box->set_rules(next.get());
    retired_.push_back(std::move(rules_));
    rules_ = std::move(next);
    return true;
}

nlohmann::ordered_json BoxesSync::stats() const {
    const uint64_t now_ns = next_sync_ns_ - options_.sync_ns;
    return {{"boxes", boxes_.size()},
            {"sync_ms", options_.sync_ns / 1'000'000},
            {"joined", state_.joined()},
            {"syncs", state_.syncs()},
            {"failed_syncs", state_.failed_syncs()},
            {"changes", state_.changes()},
            {"fallback_ms", state_.fallback_ns(now_ns) / 1'000'000},
            {"keys_told", told_},
            {"packets_charged", charged_},
            {"packets_alone_untold", dropped_alone_},
            {"refused", refused_}};
}

}  // namespace floodgate
