#include "control/metrics/flowspec_metrics.h"

#include <optional>
#include <string>

#include "control/metrics/exposition.h"

namespace floodgate {

using exposition::Family;
using exposition::flag;
using exposition::json;
using exposition::label_at;
using exposition::member;
using exposition::number_at;
using exposition::Type;

void flowspec_metrics(const json *f, std::string &out) {
    // What gobgpd's RIB held when read back; what floodctl asked for, and the difference.
    Family rib("floodgate_flowspec_rules", Type::gauge,
               "FlowSpec rules (and RTBH routes) in the local gobgpd's RIB when read back, "
               "announced upstream.");
    rib.add({{"form", "flowspec"}}, number_at(f, "in_rib"));
    rib.add({{"form", "rtbh"}}, number_at(f, "blackholes_in_rib"));
    rib.write(out);
    Family asked("floodgate_flowspec_asked", Type::gauge,
                 "FlowSpec rules (and RTBH routes) floodctl asked the local gobgpd to hold.");
    asked.add({{"form", "flowspec"}}, number_at(f, "asked"));
    asked.add({{"form", "rtbh"}}, number_at(f, "blackholes_asked"));
    asked.write(out);
    Family missing("floodgate_flowspec_missing", Type::gauge,
                   "Rules (and RTBH routes) asked for that gobgpd's RIB did not hold when read "
                   "back: refused by its import policy, or lost.");
    missing.add({{"form", "flowspec"}}, number_at(f, "missing"));
    missing.add({{"form", "rtbh"}}, number_at(f, "blackholes_missing"));
    missing.write(out);
    Family rule("floodgate_flowspec_rule_in_rib", Type::gauge,
                "1 for each rule asked for that gobgpd's RIB held when read back, 0 if not.");
    if (const json *rules = member(f, "rules"); rules != nullptr && rules->is_array())
        for (const json &r : *rules) {
            // A rule without a match is no sample: two of them would be one series twice.
            const std::optional<std::string> match = label_at(&r, "match");
            if (!match) continue;
            const json *held = member(&r, "in_rib");
            rule.add({{"match", *match}, {"origin", label_at(&r, "origin").value_or("")}},
                     flag(held != nullptr && held->is_boolean() && held->get<bool>()));
        }
    rule.write(out);
    Family not_landed("floodgate_flowspec_missing_after_add_total", Type::counter,
                      "Routes added through gobgp's CLI (which exited 0) and not in the RIB read "
                      "back: refused by gobgpd, its import policy for one.");
    not_landed.add({}, number_at(f, "missing_after_add"));
    not_landed.write(out);
    Family changes("floodgate_flowspec_changes_total", Type::counter,
                   "Routes announced, withdrawn, and found stale in the RIB and withdrawn.");
    changes.add({{"change", "announced"}}, number_at(f, "announced"));
    changes.add({{"change", "withdrawn"}}, number_at(f, "withdrawn"));
    changes.add({{"change", "stale_withdrawn"}}, number_at(f, "stale_withdrawn"));
    changes.write(out);
    Family withheld("floodgate_flowspec_withheld", Type::gauge,
                    "Rules to announce that are not: past the most at once (limit) or waiting "
                    "for the announcement rate (rate).");
    withheld.add({{"reason", "limit"}}, number_at(f, "withheld_limit"));
    withheld.add({{"reason", "rate"}}, number_at(f, "withheld_rate"));
    withheld.write(out);
    Family refused("floodgate_flowspec_refused", Type::gauge,
                   "Rules to announce that are refused: a source prefix shorter than "
                   "--flowspec-min-source4 or 6 (short_source), or overlapping "
                   "--flowspec-never-block (never_block).");
    refused.add({{"reason", "short_source"}}, number_at(f, "refused_short_source"));
    refused.add({{"reason", "never_block"}}, number_at(f, "refused_never_block"));
    refused.write(out);
    Family failed("floodgate_flowspec_failed_calls_total", Type::counter,
                  "gobgp calls that failed, timed out or said too much.");
    failed.add({}, number_at(f, "failed_calls"));
    failed.write(out);
}

}  // namespace floodgate
