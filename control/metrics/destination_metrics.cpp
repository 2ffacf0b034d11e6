#include "control/metrics/destination_metrics.h"

#include <optional>
#include <string>

#include "control/metrics/exposition.h"

namespace floodgate {

using exposition::array_at;
using exposition::Family;
using exposition::flag;
using exposition::json;
using exposition::label_at;
using exposition::member;
using exposition::number_at;
using exposition::Type;

void destination_metrics(const json *stats, std::string &out) {
    // Help texts are literals: a family keeps a view of its help.
    Family rate("floodgate_destination_rate_packets_per_second", Type::gauge,
                "Packets toward the destination the rule matched in the dataplane's last whole "
                "second (its clock's). The rule's busiest destinations (a Space-Saving summary "
                "per core).");
    Family passed("floodgate_destination_passed_packets_per_second", Type::gauge,
                  "Of those, packets passed in the dataplane's last whole second.");
    Family limit("floodgate_destination_limit_packets_per_second", Type::gauge,
                 "The rule's limit toward the destination: rules kept per destination only.");
    Family headroom("floodgate_destination_headroom_packets_per_second", Type::gauge,
                    "The limit less the rate: how far the destination is from its limit "
                    "(negative: over it).");
    Family baseline("floodgate_destination_baseline_packets_per_second", Type::gauge,
                    "The destination's own normal: its rate averaged over about 256 s "
                    "(exponentially, once a second), once it was seen for a whole second.");
    Family ratio("floodgate_destination_baseline_ratio", Type::gauge,
                 "The rate over the baseline (1e9 over a zero baseline).");
    Family high("floodgate_destination_load_high", Type::gauge,
                "1 when the destination's rate is over load_high_ratio times its baseline (seen "
                "for 8 s or more) while its rule passes 99% of it: total load high with no key "
                "over its limit.");
    Family count("floodgate_rule_load_high_destinations", Type::gauge,
                 "Destinations of the rule that raise floodgate_destination_load_high, of all "
                 "its summaries hold (not only those listed).");
    Family k("floodgate_rule_load_high_ratio", Type::gauge,
             "How many times its baseline a destination's rate must be for the signal.");
    Family keys("floodgate_rule_keys", Type::gauge,
                "Keys (sources, destinations, pairs) the rule held packets to in the dataplane's "
                "last whole second: a HyperLogLog estimate, standard error 3.25%.");
    Family allowance("floodgate_rule_allowance_packets_per_second", Type::gauge,
                     "What the rule's limit allows those keys in sum: keys x the rule's rate. "
                     "Far above what the service can take: the limits do not protect it.");
    Family matched("floodgate_rule_matched_packets_per_second", Type::gauge,
                   "Packets the rule matched in the dataplane's last whole second.");
    if (const json *rules = array_at(stats, "rules"))
        for (const json &r : *rules) {
            const std::optional<std::string> rule = label_at(&r, "name");
            const json *rows = array_at(&r, "destinations");
            if (!rule || rows == nullptr) continue;
            count.add({{"rule", *rule}}, number_at(&r, "load_high"));
            k.add({{"rule", *rule}}, number_at(&r, "load_high_ratio"));
            keys.add({{"rule", *rule}}, number_at(&r, "keys"));
            allowance.add({{"rule", *rule}}, number_at(&r, "allowance_per_s"));
            matched.add({{"rule", *rule}}, number_at(&r, "matched_per_s"));
            for (const json &d : *rows) {
                const std::optional<std::string> dst = label_at(&d, "destination");
                if (!dst) continue;
                rate.add({{"rule", *rule}, {"destination", *dst}}, number_at(&d, "rate"));
                passed.add({{"rule", *rule}, {"destination", *dst}}, number_at(&d, "passed_rate"));
                if (member(&d, "limit_per_s") != nullptr) {
                    limit.add({{"rule", *rule}, {"destination", *dst}},
                              number_at(&d, "limit_per_s"));
                    headroom.add({{"rule", *rule}, {"destination", *dst}},
                                 number_at(&d, "headroom"));
                }
                baseline.add({{"rule", *rule}, {"destination", *dst}}, number_at(&d, "baseline"));
                ratio.add({{"rule", *rule}, {"destination", *dst}}, number_at(&d, "ratio"));
                const json *h = member(&d, "load_high");
                high.add({{"rule", *rule}, {"destination", *dst}},
                         flag(h != nullptr && h->is_boolean() && h->get<bool>()));
            }
        }
    for (Family *f : {&rate, &passed, &limit, &headroom, &baseline, &ratio, &high, &count, &k,
                      &keys, &allowance, &matched})
        f->write(out);
}

}  // namespace floodgate
