// A counter with one writer (a worker core) that other threads (stats, telemetry, the control
// thread) read while it runs: relaxed atomic loads and stores through std::atomic_ref, on
// x86-64 the same mov as a plain access, and defined behaviour in C++ (a plain load racing a
// plain store is not). The writer adds with a load and a store, never a locked
// read-modify-write. A value read alone; what must be read together is copied by its writer
// (Pipeline::read_stats).
#pragma once

#include <atomic>
#include <cstdint>

namespace floodgate {

class Counter {
  public:
    Counter() = default;
    Counter(const Counter &other) : value_(other.load()) {}
    Counter &operator=(const Counter &other) {
        set(other.load());
        return *this;
    }

    uint64_t load() const {
        return std::atomic_ref<uint64_t>(const_cast<uint64_t &>(value_))
            .load(std::memory_order_relaxed);
    }
    operator uint64_t() const { return load(); }
    // Writer side (one thread only).
    void set(uint64_t v) { std::atomic_ref<uint64_t>(value_).store(v, std::memory_order_relaxed); }
    Counter &operator+=(uint64_t n) {
        set(load() + n);
        return *this;
    }
    Counter &operator++() { return *this += 1; }

  private:
    alignas(std::atomic_ref<uint64_t>::required_alignment) uint64_t value_ = 0;
};
static_assert(sizeof(Counter) == 8 && std::atomic_ref<uint64_t>::is_always_lock_free);

}  // namespace floodgate
