// floodctl top --dst: each rule's destinations, the nearest to its limit or far over its own
// baseline first (dataplane/api/destination_text.h), after each rule's sum of allowances.
#include <cstdio>

#include "control/cli/commands.h"
#include "dataplane/api/daemon_commands.h"
#include "dataplane/api/destination_text.h"
#include "dataplane/api/stats_text.h"

namespace floodgate {

using nlohmann::json;

int cmd_top_destinations(const Ctl &ctl, const std::string &rule, int n) {
    json r;
    if (!ctl.ask(dataplane_request(DataplaneCommand::stats, {{"top", n}}), &r)) return 1;
    const json &stats = r["stats"];
    bool named = rule.empty();
    for (const json &x : stats.value("rules", json::array()))
        named = named || x.value("name", "") == rule;
    if (!named) {
        std::fprintf(stderr, "floodctl: no rule named \"%s\"\n", rule.c_str());
        return 1;
    }
    const std::vector<DestinationRow> rows = nearest_destinations(stats, rule);
    if (ctl.json_out) {
        json out = json::array();
        for (const DestinationRow &row : rows) {
            json d = row.destination;
            d["rule"] = row.rule;
            out.push_back(d);
        }
        std::printf("%s\n", json({{"ok", true}, {"destinations", out}}).dump(2).c_str());
        return 0;
    }
    // What the limits allow in sum against what came: how far they are from protecting capacity.
    for (const json &x : stats.value("rules", json::array()))
        if (rule.empty() || x.value("name", "") == rule)
            std::printf("rule %s: %.0f keys (+-%.1f%%) x %s/s = %s/s allowed, %s/s matched\n",
                        x.value("name", "").c_str(), x.value("keys", 0.0),
                        100 * x.value("keys_error", 0.0), si(x.value("limit_per_s", 0.0)).c_str(),
                        si(x.value("allowance_per_s", 0.0)).c_str(),
                        si(x.value("matched_per_s", 0.0)).c_str());
    std::printf("%s\n", destination_header().c_str());
    if (rows.empty()) std::printf("  (no packet matched a rule in the last whole second)\n");
    for (const DestinationRow &row : rows) std::printf("%s\n", destination_line(row).c_str());
    return 0;
}

}  // namespace floodgate
