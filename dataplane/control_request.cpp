#include "dataplane/control_request.h"

#include "dataplane/api/control_protocol.h"
#include "dataplane/api/message.h"
#include "dataplane/heavy_hitters.h"
#include "dataplane/stats_json.h"

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

// {source, text, rules}: rules is the file's JSON document (doc_to_json), validated again
// here; text is kept only to show people what they loaded.
ControlRequest load(const nlohmann::json &request) {
    RulesFile next;
    next.name = get_string(request, "source");
    next.text = get_string(request, "text");
    auto doc = request.find("rules");
    if (doc == request.end())
        throw MessageError(
            "missing field \"rules\" (the rules file's document, as floodctl sends it)");
    try {
        next.config = config_from_doc(json_to_doc(*doc, next.name), next.name);
    } catch (const ConfigError &e) {
        return RefusedLoadRequest{e};
    }
    next.doc = *doc;
    return LoadRequest{std::move(next)};
}

}  // namespace

ControlRequest decode_control_request(const std::string &line) {
    const nlohmann::json request = parse_request(line);
    const std::string cmd = get_string(request, "cmd");
    if (cmd == "status") return StatusRequest{};
    if (cmd == "stats")
        return StatsRequest{static_cast<unsigned>(
            get_int(request, "top", 1, HeavyHitters::kCounters, kTopRefusedReported))};
    if (cmd == "rules") return RulesRequest{};
    if (cmd == "overrides") return OverridesRequest{};
    if (cmd == "load") return load(request);
    if (cmd == "mode") {
        ModeRequest m;
        m.rule = get_string(request, "rule");
        const std::string mode = get_string(request, "mode");
        if (mode != "shadow" && mode != "enforce")
            throw MessageError("field \"mode\" must be \"shadow\" or \"enforce\"");
        m.mode = mode == "shadow" ? RuleMode::shadow : RuleMode::enforce;
        return m;
    }
    if (cmd == "override_add") {
        OverrideAddRequest o;
        o.list = list_field(request);
        o.prefix = prefix_field(request);
        o.ttl_s = get_int(request, "ttl_s", 0, kMaxOverrideTtlSeconds, 0);
        return o;
    }
    if (cmd == "override_del") {
        OverrideDelRequest o;
        o.list = list_field(request);
        o.prefix = prefix_field(request);
        return o;
    }
    throw MessageError("unknown command \"" + cmd + "\"");
}

}  // namespace floodgate
