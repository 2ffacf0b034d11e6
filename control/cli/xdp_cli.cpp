#include "control/cli/xdp_cli.h"

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>

#include "dataplane/api/numbers.h"
#include "rules/load.h"

#if FG_HAVE_XDP
#include "bpf/xdp_tier.h"
#endif

namespace floodgate {

namespace {

int xdp_usage(const std::string &why) {
    std::fprintf(stderr, "floodctl: xdp: %s\nusage:\n%s", why.c_str(), kXdpUsage);
    return 2;
}

int xdp_failed(const std::string &why) {
    std::fprintf(stderr, "floodctl: xdp: %s\n", why.c_str());
    return 1;
}

}  // namespace

#if !FG_HAVE_XDP
int cmd_xdp(const XdpArgs &, bool) {
    return xdp_failed("this floodctl was built without the XDP tier (no clang, bpftool or libbpf)");
}
#else

namespace {

std::string pin_dir() {
    const char *dir = std::getenv("FLOODGATE_XDP_PIN_DIR");
    return dir != nullptr && *dir != 0 ? dir : kXdpPinDir;
}

// The pinned maps, without loading a program; with create, loaded (and pinned) when nothing is
// pinned yet.
std::unique_ptr<XdpTier> open_maps(bool create, std::string *error) {
    std::unique_ptr<XdpTier> t = XdpTier::open_pinned(pin_dir(), error);
    if (t || !create) return t;
    XdpOptions o;
    o.pin_dir = pin_dir();
    return XdpTier::load(o, error);
}

int done(bool json_out, const std::string &text, nlohmann::json reply = nlohmann::json::object()) {
    if (json_out) {
        reply["ok"] = true;
        std::printf("%s\n", reply.dump(2).c_str());
    } else {
        std::printf("%s\n", text.c_str());
    }
    return 0;
}

int failed_json(bool json_out, const std::string &why) {
    if (json_out) std::printf("%s\n", nlohmann::json{{"ok", false}, {"error", why}}.dump().c_str());
    return xdp_failed(why);
}

int list(XdpTier &tier, bool json_out) {
    const uint64_t now = XdpTier::monotonic_ns();
    nlohmann::json out = nlohmann::json::array();
    for (const XdpEntry &e : tier.list()) {
        if (e.expires_ns != 0 && e.expires_ns <= now) continue;  // as absent for the program
        nlohmann::json j = {{"prefix", format_prefix(e.prefix)},
                            {"action", e.allow ? "allow" : "block"},
                            {"origin", xdp_origin_name(e.origin)}};
        j["expires_in_s"] =
            e.expires_ns == 0
                ? nlohmann::json()
                : nlohmann::json(e.expires_ns > now ? (e.expires_ns - now) / 1'000'000'000 : 0);
        out.push_back(j);
    }
    if (json_out) return done(true, "", {{"entries", out}});
    if (out.empty()) std::printf("(no entries)\n");
    for (const auto &e : out)
        std::printf(
            "%-45s %-5s %-9s %s\n", e["prefix"].get<std::string>().c_str(),
            e["action"].get<std::string>().c_str(), e["origin"].get<std::string>().c_str(),
            e["expires_in_s"].is_null()
                ? "never expires"
                : ("expires in " + format_duration_s(e["expires_in_s"].get<long long>())).c_str());
    return 0;
}

int stats(XdpTier &tier, bool json_out) {
    const std::vector<uint64_t> c = tier.counters();
    nlohmann::json out = nlohmann::json::object();
    for (unsigned i = 0; i < c.size(); ++i) out[xdp_counter_name(i)] = c[i];
    if (json_out) return done(true, "", {{"counters", out}});
    for (unsigned i = 0; i < c.size(); ++i)
        std::printf("%-16s %llu\n", xdp_counter_name(i), static_cast<unsigned long long>(c[i]));
    return 0;
}

// The rules file's allow and block lists as entries of origin rules.
std::vector<XdpEntry> rules_entries(const Config &config) {
    std::vector<XdpEntry> out;
    for (const Prefix &p : config.allow) out.push_back({p, FG_XDP_ORIGIN_rules, true, 0});
    for (const Prefix &p : config.block) out.push_back({p, FG_XDP_ORIGIN_rules, false, 0});
    return out;
}

}  // namespace

int cmd_xdp(const XdpArgs &a, bool json_out) {
    if (a.sub.empty()) return xdp_usage("no subcommand");
    const std::string &sub = a.sub;
    std::string error;
    if (sub == "detach") {
        if (!a.well_formed) return xdp_usage("detach IFACE");
        if (!XdpTier::detach(a.target, &error)) return failed_json(json_out, error);
        return done(json_out, "detached from " + a.target);
    }
    if (sub == "attach") {
        if (!a.well_formed) return xdp_usage("attach IFACE [--config RULES.yaml]");
        std::optional<Config> config;
        if (a.config) config = load_config(*a.config);  // refused with file:line:field
        XdpOptions o;
        o.pin_dir = pin_dir();
        std::unique_ptr<XdpTier> tier = XdpTier::load(o, &error);
        if (!tier) return failed_json(json_out, error);
        tier->expire(XdpTier::monotonic_ns());
        XdpReconciled r;
        if (config) {
            // The rules entries only: overrides are the dataplane's, when one shares the pins.
            r = tier->reconcile(rules_entries(*config), {FG_XDP_ORIGIN_rules});
            if (r.failed > 0)
                return failed_json(json_out, std::to_string(r.failed) +
                                                 " entries of the rules file did not fit the maps");
        }
        if (!tier->attach(a.target, &error)) return failed_json(json_out, error);
        return done(json_out,
                    "attached to " + a.target +
                        (config ? " (rules file: " + std::to_string(r.added) +
                                      " entries written, " + std::to_string(r.removed) + " removed)"
                                : ""),
                    {{"iface", a.target}, {"written", r.added}, {"removed", r.removed}});
    }
    const bool writes = sub == "add" || sub == "del";
    std::unique_ptr<XdpTier> tier = open_maps(sub == "add", &error);
    if (!tier) return failed_json(json_out, error);
    // Reading removes nothing (the dataplane counts the escalated entries it removes on time);
    // expired entries are left out of the list and cost the program nothing.
    if (writes) tier->expire(XdpTier::monotonic_ns());
    if (!a.well_formed || !(writes || sub == "list" || sub == "stats"))
        return xdp_usage("unknown subcommand or wrong arguments: " + sub);
    if (sub == "list") return list(*tier, json_out);
    if (sub == "stats") return stats(*tier, json_out);
    std::string why;
    const std::optional<Prefix> p = parse_prefix(a.target, &why);
    if (!p) return xdp_usage(why);
    if (sub == "add") {
        uint64_t expires_ns = 0;
        if (a.ttl) {
            const std::optional<long long> s = parse_duration_s(*a.ttl, &why);
            if (!s || *s <= 0)
                return xdp_usage("--ttl " + (s ? std::string("must be positive") : why));
            expires_ns = XdpTier::monotonic_ns() + static_cast<uint64_t>(*s) * 1'000'000'000ull;
        }
        if (!tier->add_operator({*p, FG_XDP_ORIGIN_operator, false, expires_ns}, &error))
            return failed_json(json_out, error);
        return done(json_out, "blocked " + format_prefix(*p), {{"prefix", format_prefix(*p)}});
    }
    XdpEntry there;
    if (tier->find(*p, &there) &&
        (there.origin == FG_XDP_ORIGIN_rules || there.origin == FG_XDP_ORIGIN_override))
        return failed_json(
            json_out, format_prefix(*p) + ": held by " +
                          (there.origin == FG_XDP_ORIGIN_rules ? "the rules file" : "an override") +
                          "; change it there");
    if (!tier->remove(*p, &error)) return failed_json(json_out, error);
    return done(json_out, "removed " + format_prefix(*p), {{"prefix", format_prefix(*p)}});
}

#endif

}  // namespace floodgate
