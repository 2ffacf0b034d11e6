#include "dataplane/live/steering_choice.h"

namespace floodgate {

SteeringChoice choose_steering(SteeringMode asked, unsigned workers, const SteeringOptions &wanted,
                               const PortFeatures &outside, const PortFeatures *inside) {
    SteeringChoice c;
    const std::string nic_does_not =
        outside.rss_refused.empty() ? "the NIC was not asked to steer" : outside.rss_refused;
    if (workers == 1) {
        c.mode = "one worker";
        c.reason = "one worker owns every source";
        return c;
    }
    if (asked == SteeringMode::none) {
        c.mode = "none";
        c.reason = "--steering none: every key shared through the merge";
        return c;
    }
    if (asked != SteeringMode::software && outside.steers) {
        // Replies reach their source's owner when the inside port hashes the destination with
        // the same key into a RETA of the same size (the same round robin over the queues).
        const bool replies =
            inside != nullptr && inside->steers && inside->reta_size == outside.reta_size;
        c.mode = "nic";
        c.reason = "the NIC hashes the source prefix (read back), RETA " +
                   std::to_string(outside.reta_size) +
                   "; frames it does not hash are handed to their owner in software";
        c.steering = nic_steering(wanted, replies);
        c.rings = true;
        c.nic_hash = NicHash{outside.rss_key, outside.reta_size};
        return c;
    }
    if (asked == SteeringMode::nic) {
        c.error = outside.rss_refused.empty() ? "does not steer" : outside.rss_refused;
        return c;
    }
    c.mode = "software";
    c.reason = asked == SteeringMode::software ? "--steering software"
                                               : "the NIC does not: " + nic_does_not;
    c.steering = software_steering(wanted, false);
    c.rings = true;
    return c;
}

}  // namespace floodgate
