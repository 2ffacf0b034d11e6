// The two halves of writing a Prometheus text exposition (format 0.0.4) from the dataplane's
// JSON replies (control/metrics/metrics.h): reading a reply's values without ever throwing, since
// it comes from another process, and writing metric families, each a block of HELP, TYPE and sample
// lines. Internal to control/metrics/metrics.cpp.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace floodgate::exposition {

using nlohmann::json;

// ---- Reading the replies: never throws ----

// obj[key] when obj is an object that has key, else null.
const json *member(const json *obj, const char *key);

// obj[key] when it is an array, else null.
const json *array_at(const json *obj, const char *key);

// A sample value as the JSON held it. Integers stay integers: a 64-bit counter past 2^53 would
// lose its low digits as a double.
using Value = std::variant<uint64_t, int64_t, double>;

// j's value when it is a number (booleans are not), else nothing.
std::optional<Value> number(const json &j);

std::optional<Value> number_at(const json *obj, const char *key);

// The dataplane counts time in nanoseconds; Prometheus wants seconds.
std::optional<Value> seconds_from_ns(std::optional<Value> ns);

// obj[key] as a label value: a string as it is, an integer in decimal, else nothing.
std::optional<std::string> label_at(const json *obj, const char *key);

// ---- Writing the exposition ----

enum class Type { counter, gauge };

struct Label {
    const char *name;
    std::string_view value;
};

// One metric family: its samples are collected first and written as one block, because the
// format wants a family's lines together. A family is written even with no samples (see
// metrics.h): the families present do not depend on what the traffic has done so far.
class Family {
  public:
    Family(std::string name, Type type, std::string_view help)
        : name_(std::move(name)), type_(type), help_(help) {}

    // Adds one sample; nothing when the value is missing, or negative for a counter (which
    // only a broken reply would send).
    void add(std::initializer_list<Label> labels, std::optional<Value> value);

    void write(std::string &out) const;

  private:
    std::string name_;
    Type type_;
    std::string_view help_;
    std::string samples_;
};

inline Value flag(bool b) {
    return Value{uint64_t{b ? 1u : 0u}};
}

}  // namespace floodgate::exposition
