#include "control/cluster/cluster_request.h"

#include <algorithm>
#include <map>
#include <string_view>
#include <tuple>
#include <utility>

#include "dataplane/api/control_protocol.h"
#include "dataplane/api/dataplane_commands.h"
#include "dataplane/api/rules.h"
#include "dataplane/api/saturating.h"

namespace floodgate {

namespace {

using nlohmann::json;

// The bytes a string takes in a JSON dump, at most: its quotes, and an escape for a quote, a
// backslash or a control character (6 bytes, as \u0001; some take 2).
size_t json_text_bytes(std::string_view s) {
    size_t n = 2;
    for (const char c : s)
        n += c == '"' || c == '\\' ? 2 : static_cast<unsigned char>(c) < 0x20 ? 6 : 1;
    return n;
}

// A row's brackets, commas and its number (20 digits at most), and the comma before it.
constexpr size_t kRowBytes = 2 + 2 + 20 + 1;
// Everything else of the request: the command, store_ok, boxes and the two arrays' names.
constexpr size_t kFrameBytes = 256;
constexpr size_t kFrameValues = 16;

// What the request may still take.
struct Budget {
    size_t charges = kMaxClusterCharges, escalations = kMaxClusterEscalations;
    size_t bytes = kMaxMessageBytes - kFrameBytes, values = kMaxMessageValues - kFrameValues;
    // Takes a row of `values` values and `bytes` bytes, if it fits.
    bool take(size_t *rows, size_t row_values, size_t row_bytes) {
        if (*rows == 0 || row_values > values || row_bytes > bytes) return false;
        --*rows;
        values -= row_values;
        bytes -= row_bytes;
        return true;
    }
};

}  // namespace

ClusterRequest cluster_sync_request(bool store_ok, uint32_t live_boxes,
                                    const std::vector<ClusterDelta> &remote) {
    ClusterRequest out;
    out.boxes = std::clamp<uint32_t>(live_boxes, 1, kMaxClusterBoxes);
    Budget budget;
    json escalations = json::array();
    // Per (rule, key, box): a row per box, which the dataplane bounds on its own.
    std::map<std::tuple<std::string, std::string, std::string>, uint64_t> sums;
    for (const ClusterDelta &d : remote) {
        if (d.rule == kAllowRule) {
            out.allows.push_back(d);
        } else if (d.rule == kEscalatedRule) {
            // [prefix, ttl_ms]: the array and its two values.
            if (budget.take(&budget.escalations, 3, kRowBytes + json_text_bytes(d.key)))
                escalations.push_back({d.key, d.packets});
            else
                ++out.left_out;
        } else {
            uint64_t &sum = sums[{d.rule, d.key, d.box}];
            sum = saturating_add(sum, d.packets);
        }
    }
    json charges = json::array();
    for (const auto &[key, packets] : sums) {
        const auto &[rule, shared_key, box] = key;
        // [rule, key, packets]: the array and its three values.
        if (budget.take(&budget.charges, 4,
                        kRowBytes + json_text_bytes(rule) + json_text_bytes(shared_key)))
            charges.push_back({rule, shared_key, packets});
        else
            ++out.left_out;
    }
    out.request = dataplane_request(DataplaneCommand::cluster_sync,
                                    {{"store_ok", store_ok},
                                     {"boxes", out.boxes},
                                     {"charges", std::move(charges)},
                                     {"escalations", std::move(escalations)}});
    return out;
}

}  // namespace floodgate
