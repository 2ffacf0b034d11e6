#include "dataplane/service/request.h"

#include <charconv>

#include "dataplane/api/base64.h"

#include "dataplane/api/control_protocol.h"
#include "dataplane/api/message.h"
#include "dataplane/core/heavy_hitters.h"
#include "dataplane/pipeline/stats_json.h"

namespace floodgate {

namespace {

PrefixVerdict list_field(const nlohmann::json &request) {
    const std::string list = get_string(request, "list");
    if (list == "allow") return PrefixVerdict::allow;
    if (list == "block") return PrefixVerdict::block;
    throw MessageError("field \"list\" must be \"allow\" or \"block\"");
}

Prefix prefix_field(const nlohmann::json &request) {
    std::string why;
    std::optional<Prefix> p = parse_prefix(get_string(request, "prefix"), &why);
    if (!p) throw MessageError("field \"prefix\": " + why);
    return *p;
}

// A request without fields (status, rules, overrides, cluster_take).
template <typename Request>
ServiceRequest decode(const nlohmann::json &) {
    return Request{};
}

template <>
ServiceRequest decode<StatsRequest>(const nlohmann::json &request) {
    return StatsRequest{static_cast<unsigned>(
        get_int(request, "top", 1, HeavyHitters::kCounters, kTopRefusedReported))};
}

template <>
ServiceRequest decode<ModeRequest>(const nlohmann::json &request) {
    ModeRequest m;
    m.rule = get_string(request, "rule");
    const std::string mode = get_string(request, "mode");
    if (mode != "shadow" && mode != "enforce")
        throw MessageError("field \"mode\" must be \"shadow\" or \"enforce\"");
    m.mode = mode == "shadow" ? RuleMode::shadow : RuleMode::enforce;
    return m;
}

template <>
ServiceRequest decode<OverrideAddRequest>(const nlohmann::json &request) {
    OverrideAddRequest o;
    o.list = list_field(request);
    o.prefix = prefix_field(request);
    o.ttl_s = get_int(request, "ttl_s", 0, kMaxOverrideTtlSeconds, 0);
    return o;
}

template <>
ServiceRequest decode<OverrideDelRequest>(const nlohmann::json &request) {
    OverrideDelRequest o;
    o.list = list_field(request);
    o.prefix = prefix_field(request);
    return o;
}

// {source, text, rules}: rules is the file's JSON document (doc_to_json), validated again
// here; text is kept only to show people what they loaded.
template <>
ServiceRequest decode<LoadRequest>(const nlohmann::json &request) {
    RulesFile next;
    next.name = get_string(request, "source");
    next.text = get_string(request, "text");
    auto doc = request.find("rules");
    if (doc == request.end())
        throw MessageError(
            "missing field \"rules\" (the rules file's document, as floodctl sends it)");
    // The payload rules' databases the control plane compiled, by rule index; one that does not
    // load here (another CPU or Hyperscan) is compiled again instead.
    PrecompiledPayloads precompiled;
    if (auto dbs = request.find("payload_databases"); dbs != request.end()) {
        if (!dbs->is_object())
            throw MessageError("\"payload_databases\" must be an object of rule index to base64");
        for (const auto &[index, entry] : dbs->items()) {
            size_t i = 0;
            const auto [end, ec] = std::from_chars(index.data(), index.data() + index.size(), i);
            const auto blob = entry.is_object() ? entry.find("database") : entry.end();
            const auto print = entry.is_object() ? entry.find("fingerprint") : entry.end();
            if (ec != std::errc() || end != index.data() + index.size() || i >= kMaxRules ||
                blob == entry.end() || !blob->is_string() || print == entry.end() ||
                !print->is_string())
                throw MessageError("\"payload_databases\": bad entry \"" + index +
                                   "\" (expected {database: base64, fingerprint})");
            const std::optional<std::string> bytes = base64_decode(blob->get<std::string>());
            if (!bytes) throw MessageError("\"payload_databases\"." + index + ": not base64");
            std::string ignored;
            if (auto db = PayloadDatabase::deserialize(*bytes, &ignored))
                precompiled[i] = {db, print->get<std::string>()};
        }
    }
    try {
        next.config = config_from_doc(json_to_doc(*doc, next.name), next.name, &precompiled);
    } catch (const ConfigError &e) {
        return RefusedLoadRequest{e};
    }
    next.doc = *doc;
    LoadRequest out{std::move(next)};
    for (size_t i = 0; i < out.rules.config.rules.size(); ++i) {
        if (!out.rules.config.rules[i].match.payload.present()) continue;
        const auto it = precompiled.find(i);
        const bool used = it != precompiled.end() &&
                          it->second.database == out.rules.config.rules[i].match.payload.compiled;
        ++(used ? out.payload_precompiled : out.payload_compiled);
    }
    return out;
}

// {store_ok, boxes, charges: [[rule, key, packets], ...]}, a row per other box and key: the
// shape is checked here, each charge's meaning (a shared rule, one of its keys) when it is
// applied, one key at a time.
template <>
ServiceRequest decode<ClusterSyncRequest>(const nlohmann::json &request) {
    ClusterSyncRequest out;
    out.store_ok = get_bool(request, "store_ok", false);
    out.boxes = static_cast<uint32_t>(get_int(request, "boxes", 1, kMaxClusterBoxes, 1));
    if (const auto esc = request.find("escalations"); esc != request.end()) {
        if (!esc->is_array() || esc->size() > kMaxClusterEscalations)
            throw MessageError("field \"escalations\" must be an array of at most " +
                               std::to_string(kMaxClusterEscalations) + " [prefix, ttl_ms]");
        for (const nlohmann::json &e : *esc) {
            if (!e.is_array() || e.size() != 2 || !e[0].is_string() || !e[1].is_number_unsigned())
                throw MessageError("field \"escalations\": each entry is [prefix, ttl_ms]");
            out.escalations.emplace_back(e[0].get<std::string>(), e[1].get<uint64_t>());
        }
    }
    const auto charges = request.find("charges");
    if (charges == request.end()) return out;
    if (!charges->is_array() || charges->size() > kMaxClusterCharges)
        throw MessageError("field \"charges\" must be an array of at most " +
                           std::to_string(kMaxClusterCharges) + " [rule, key, packets]");
    for (const nlohmann::json &c : *charges) {
        if (!c.is_array() || c.size() != 3 || !c[0].is_string() || !c[1].is_string() ||
            !c[2].is_number_unsigned())
            throw MessageError("field \"charges\": each entry is [rule, key, packets]");
        out.charges[{c[0].get<std::string>(), c[1].get<std::string>()}].push_back(
            c[2].get<uint64_t>());
    }
    return out;
}

}  // namespace

ServiceRequest decode_service_request(const std::string &line) {
    const nlohmann::json request = parse_request(line);
    const std::string name = get_string(request, kCommandField);
    const std::optional<DataplaneCommand> command = parse_dataplane_command(name);
    if (!command) throw MessageError("unknown command \"" + name + "\"");
    switch (*command) {
#define FG_SERVICE_DECODE(name, request_type) \
    case DataplaneCommand::name:              \
        return decode<request_type>(request);
        FG_DATAPLANE_COMMANDS(FG_SERVICE_DECODE)
#undef FG_SERVICE_DECODE
    }
    throw MessageError("unknown command \"" + name + "\"");  // not reached: each has a case
}

}  // namespace floodgate
