// The FlowSpec exporter (control/upstream/flowspec.h) driven from stdin, for the test with two real
// gobgpd speakers (tests/control/test_flowspec_bgp.py).
//   flowspec_driver [--gobgp PATH] [--api HOST:PORT] [--max-announced N] [--max-new-per-s R]
//                   [--rtbh] [--timeout-ms N]
// Commands, one a line, each answered with one line of JSON
// {"elapsed_ms": ..., "counters": {...}, "error": last_error}:
//   desire [{"source": "198.18.66.6/32", "destination": "198.18.1.1/32", "protocol": 17,
//            "destination_port": [53, 53], "origin": "dns"}, ...]     reconcile(those, now)
//   withdraw_all
//   counters
#include <chrono>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "control/upstream/flowspec.h"

namespace {

using floodgate::FlowspecRule;
using nlohmann::json;

floodgate::Prefix prefix(const json &text) {
    std::string why;
    std::optional<floodgate::Prefix> p = floodgate::parse_prefix(text.get<std::string>(), &why);
    if (!p) throw std::runtime_error(why);
    return *p;
}

std::vector<FlowspecRule> rules(const json &list) {
    std::vector<FlowspecRule> out;
    for (const json &j : list) {
        FlowspecRule r;
        r.source = prefix(j.at("source"));
        if (j.contains("destination")) r.destination = prefix(j["destination"]);
        if (j.contains("protocol")) r.protocol = j["protocol"].get<uint8_t>();
        if (j.contains("destination_port"))
            r.destination_port = floodgate::PortRange{j["destination_port"].at(0).get<uint16_t>(),
                                                      j["destination_port"].at(1).get<uint16_t>()};
        r.origin = j.value("origin", "test");
        out.push_back(std::move(r));
    }
    return out;
}

json counters(const floodgate::FlowspecExporter &e) {
    const auto &c = e.counters();
    return {{"announced", c.announced},
            {"withdrawn", c.withdrawn},
            {"stale_withdrawn", c.stale_withdrawn},
            {"failed_calls", c.failed_calls},
            {"missing_after_add", c.missing_after_add},
            {"asked", c.asked},
            {"in_rib", c.in_rib},
            {"missing", c.missing},
            {"blackholes_in_rib", c.blackholes_in_rib},
            {"blackholes_missing", c.blackholes_missing},
            {"withheld_limit", c.withheld_limit},
            {"withheld_rate", c.withheld_rate},
            {"invalid", c.invalid}};
}

uint64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

}  // namespace

int main(int argc, char **argv) {
    floodgate::FlowspecOptions o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const bool has_value = i + 1 < argc;
        if (a == "--rtbh")
            o.rtbh = true;
        else if (a == "--gobgp" && has_value)
            o.gobgp = argv[++i];
        else if (a == "--api" && has_value)
            o.api = argv[++i];
        else if (a == "--max-announced" && has_value)
            o.max_announced = std::stoul(argv[++i]);
        else if (a == "--max-new-per-s" && has_value)
            o.max_new_per_s = std::stod(argv[++i]);
        else if (a == "--timeout-ms" && has_value)
            o.call_timeout_ms = std::stoi(argv[++i]);
        else {
            std::fprintf(stderr, "flowspec_driver: unknown option %s\n", a.c_str());
            return 2;
        }
    }
    floodgate::FlowspecExporter exporter(o);
    for (std::string line; std::getline(std::cin, line);) {
        const auto start = std::chrono::steady_clock::now();
        json reply;
        try {
            if (line.starts_with("desire "))
                exporter.reconcile(rules(json::parse(line.substr(7))), now_ns());
            else if (line == "withdraw_all")
                exporter.withdraw_all();
            else if (line != "counters")
                throw std::runtime_error("unknown command");
            reply["error"] = exporter.last_error();
        } catch (const std::exception &e) {
            reply["error"] = std::string("driver: ") + e.what();
        }
        reply["elapsed_ms"] =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                .count();
        reply["counters"] = counters(exporter);
        std::cout << reply.dump() << std::endl;
    }
    return 0;
}
