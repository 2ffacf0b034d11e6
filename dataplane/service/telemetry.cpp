#include "dataplane/service/telemetry.h"

#include <rte_telemetry.h>

#include <cerrno>
#include <mutex>
#include <string>

#include "dataplane/service/service.h"

namespace floodgate {

namespace {

std::mutex g_lock;
Service *g_service = nullptr;

// Telemetry strings are at most RTE_TEL_MAX_STRING_LEN bytes, names included.
std::string fit(const std::string &s) {
    return s.size() < RTE_TEL_MAX_STRING_LEN ? s : s.substr(0, RTE_TEL_MAX_STRING_LEN - 1);
}

// Adds the scalar members of a JSON object to a telemetry dict; nested objects are added
// with their keys joined by '_' (one level), arrays are skipped.
void add_scalars(rte_tel_data *d, const nlohmann::ordered_json &j, const std::string &prefix = "") {
    for (const auto &[key, value] : j.items()) {
        std::string name = fit(prefix + key);
        if (value.is_number_unsigned())
            rte_tel_data_add_dict_u64(d, name.c_str(), value.get<uint64_t>());
        else if (value.is_number_integer())
            rte_tel_data_add_dict_int(d, name.c_str(), static_cast<int>(value.get<int64_t>()));
        else if (value.is_number_float())
            rte_tel_data_add_dict_u64(d, name.c_str(), static_cast<uint64_t>(value.get<double>()));
        else if (value.is_string())
            rte_tel_data_add_dict_string(d, name.c_str(), fit(value.get<std::string>()).c_str());
        else if (value.is_boolean())
            rte_tel_data_add_dict_int(d, name.c_str(), value.get<bool>() ? 1 : 0);
        else if (value.is_object() && prefix.empty())
            add_scalars(d, value, key + "_");
    }
}

// Runs a command against the attached service. These are C callbacks on DPDK's telemetry
// thread: an exception leaving one would end the process (and the filtering), so any failure,
// a stats reading a worker did not answer among them, is "try again".
template <typename Answer>
int answer(Answer &&f) {
    try {
        std::lock_guard<std::mutex> guard(g_lock);
        if (g_service == nullptr) return -EAGAIN;
        return f(*g_service);
    } catch (const std::exception &) {
        return -EAGAIN;
    }
}

int status_cmd(const char *, const char *, rte_tel_data *d) {
    return answer([&](Service &service) {
        nlohmann::ordered_json s = service.status();
        rte_tel_data_start_dict(d);
        add_scalars(d, s);
        return 0;
    });
}

int stats_cmd(const char *, const char *, rte_tel_data *d) {
    return answer([&](Service &service) {
        nlohmann::ordered_json s = service.stats();
        rte_tel_data_start_dict(d);
        add_scalars(d, s);
        return 0;
    });
}

int rules_cmd(const char *, const char *, rte_tel_data *d) {
    return answer([&](Service &service) {
        nlohmann::ordered_json r = service.rules();
        rte_tel_data_start_array(d, RTE_TEL_STRING_VAL);
        for (const auto &rule : r["rules"])
            rte_tel_data_add_array_string(d, fit(rule["name"].get<std::string>()).c_str());
        return 0;
    });
}

int rule_cmd(const char *, const char *params, rte_tel_data *d) {
    if (params == nullptr || *params == '\0') return -EINVAL;
    return answer([&](Service &service) {
        nlohmann::ordered_json s = service.stats();
        for (const auto &rule : s["rules"]) {
            if (rule["name"] != params) continue;
            rte_tel_data_start_dict(d);
            add_scalars(d, rule);
            return 0;
        }
        // DPDK shows a failed command as null: say what is wrong instead.
        rte_tel_data_start_dict(d);
        rte_tel_data_add_dict_string(d, "error",
                                     fit("no rule named \"" + std::string(params) + "\"").c_str());
        return 0;
    });
}

// An array of "block 198.18.0.0/24 expires 1764480000" strings: dict names may hold only
// letters, digits, '_' and '/', which prefixes do not fit.
int overrides_cmd(const char *, const char *, rte_tel_data *d) {
    return answer([&](Service &service) {
        nlohmann::ordered_json o = service.overrides();
        rte_tel_data_start_array(d, RTE_TEL_STRING_VAL);
        unsigned n = 0;
        for (const auto &row : o["overrides"]) {
            if (++n > RTE_TEL_MAX_ARRAY_ENTRIES) break;
            std::string expiry =
                row["expires_unix"].is_null()
                    ? "never expires"
                    : "expires " + std::to_string(row["expires_unix"].get<uint64_t>());
            std::string line = row["list"].get<std::string>() + " " +
                               row["prefix"].get<std::string>() + " " + expiry;
            rte_tel_data_add_array_string(d, fit(line).c_str());
        }
        return 0;
    });
}

}  // namespace

void attach_telemetry(Service *service) {
    static std::once_flag registered;
    std::call_once(registered, [] {
        rte_telemetry_register_cmd("/floodgate/status", status_cmd,
                                   "Ruleset version and source, reloads, workers. No parameters");
        rte_telemetry_register_cmd(
            "/floodgate/stats", stats_cmd,
            "Counters summed over the workers, and the table. No parameters");
        rte_telemetry_register_cmd("/floodgate/rules", rules_cmd,
                                   "The rule names, in order. No parameters");
        rte_telemetry_register_cmd("/floodgate/rule", rule_cmd,
                                   "One rule's mode and counters. Parameter: rule name");
        rte_telemetry_register_cmd("/floodgate/overrides", overrides_cmd,
                                   "Runtime allow/block prefixes and expiry. No parameters");
    });
    std::lock_guard<std::mutex> guard(g_lock);
    g_service = service;
}

}  // namespace floodgate
