// Control-protocol messages on any line, on both sides of the protocol:
//  - the dataplane's: decode_service_request (dataplane/service/request.h), which parses,
//    checks every field and validates a load's rules, as Service::handle does first;
//  - floodctl's daemon: parse_request, parse_response and the typed getters
//    (dataplane/api/message.h), as Daemon::handle_cli and its link to the dataplane use them;
//  - both: read_command, which routes a line before it is parsed, and must name the command
//    the parsed request has.
// A refusal is a MessageError; any other exception is a finding. What is accepted must be in
// the ranges the protocol states (dataplane/api/control_protocol.h).
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <variant>

#include "dataplane/api/control_protocol.h"
#include "dataplane/api/message.h"
#include "dataplane/core/heavy_hitters.h"
#include "dataplane/service/request.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using namespace floodgate;

void check_prefix(const Prefix &p) {
    FUZZ_CHECK(p.family == 4 || p.family == 6);
    FUZZ_CHECK(p.len <= (p.family == 4 ? 32 : 128));
    std::string why;
    const std::optional<Prefix> again = parse_prefix(format_prefix(p), &why);
    FUZZ_CHECK(again && *again == p);
}

void check_request(const ServiceRequest &request) {
    std::visit(
        [](const auto &r) {
            using T = std::decay_t<decltype(r)>;
            if constexpr (std::is_same_v<T, StatsRequest>) {
                FUZZ_CHECK(r.top >= 1 && r.top <= HeavyHitters::kCounters);
            } else if constexpr (std::is_same_v<T, LoadRequest>) {
                FUZZ_CHECK(r.rules.config.rules.size() <= kMaxRules);
                // The service replies with the document it was sent: it must serialize.
                r.rules.doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
            } else if constexpr (std::is_same_v<T, RefusedLoadRequest>) {
                FUZZ_CHECK(r.error.what()[0] != '\0');
            } else if constexpr (std::is_same_v<T, ModeRequest>) {
                FUZZ_CHECK(r.mode == RuleMode::shadow || r.mode == RuleMode::enforce);
            } else if constexpr (std::is_same_v<T, OverrideAddRequest>) {
                FUZZ_CHECK(r.list == PrefixVerdict::allow || r.list == PrefixVerdict::block);
                FUZZ_CHECK(r.ttl_s >= 0 && r.ttl_s <= kMaxOverrideTtlSeconds);
                check_prefix(r.prefix);
            } else if constexpr (std::is_same_v<T, OverrideDelRequest>) {
                FUZZ_CHECK(r.list == PrefixVerdict::allow || r.list == PrefixVerdict::block);
                check_prefix(r.prefix);
            }
        },
        request);
}

// Each getter on its own: one field's refusal must not hide another's crash.
template <typename F>
void refused_or_ok(F &&f) {
    try {
        f();
    } catch (const MessageError &e) {
        FUZZ_CHECK(e.what()[0] != '\0');
    }
}

void daemon_side(const std::string &line) {
    nlohmann::json request;
    try {
        request = parse_request(line);
    } catch (const MessageError &) {
        return;
    }
    FUZZ_CHECK(request.is_object() && request.at(kCommandField).is_string());
    // The command a request is routed by (read without parsing) is the one it is decoded with.
    if (const std::optional<std::string_view> routed = read_command(line))
        FUZZ_CHECK(*routed == request.at(kCommandField).get<std::string>());
    refused_or_ok([&] { get_string(request, "source"); });
    refused_or_ok([&] { get_string(request, "text"); });
    refused_or_ok([&] { get_bool(request, "dry_run", false); });
    refused_or_ok([&] {
        const long long top = get_int(request, "top", 1, HeavyHitters::kCounters, 10);
        FUZZ_CHECK(top >= 1 && top <= HeavyHitters::kCounters);
    });
    refused_or_ok([&] {
        const long long ttl = get_int(request, "ttl_s", 0, kMaxOverrideTtlSeconds, 0);
        FUZZ_CHECK(ttl >= 0 && ttl <= kMaxOverrideTtlSeconds);
    });
    refused_or_ok([&] {
        const long long v = get_int(request, "ttl_s", -5, 5, 0);
        FUZZ_CHECK(v >= -5 && v <= 5);
    });
    // The daemon answers with the request's fields in its reply; that dump must not throw.
    request.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const std::string line(reinterpret_cast<const char *>(data), size);
    refused_or_ok([&] { check_request(decode_service_request(line)); });
    read_command(line);  // whatever the line: no crash, no read past it
    daemon_side(line);
    refused_or_ok([&] {
        const nlohmann::json reply = parse_response(line);
        FUZZ_CHECK(reply.at("ok").is_boolean());
    });
    return 0;
}
