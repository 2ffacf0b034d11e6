// The packets a worker's shape rules hold (action: shape), each until its release time: a
// timer wheel of kSlots slots of kSlotNs (2^14 ns, 16.4 us; one turn is 1.07 s), each slot a
// FIFO list through a fixed pool of items. Holding a packet and releasing one cost the same
// whatever is held: a push appends to its slot's list; a pop visits the slots whose time has
// passed, once each. An item more than a turn ahead stays in its slot and is passed over once
// a turn (an item held 10 s is looked at 10 times; one held under 1 s, once).
//
// Why not rte_sched: it schedules by class and pipe toward a port's line rate, with a fixed
// hierarchy configured per port; a shape rule needs one FIFO per key (any number, made and
// forgotten with the key's TAT) released at the key's own times, which the key's GCRA TAT
// already gives (Pipeline: a held packet's release time is when its limit admits it). What is
// left is ordering times, which the wheel does in O(1) (perf/bench_decision's shape case).
//
// Order: a key's packets have increasing release times, so they are released in order; two
// keys' packets in one slot leave in the order they were held. Plain data, one thread.
#pragma once

#include <cstdint>
#include <vector>

namespace floodgate {

class ShapeWheel {
  public:
    static constexpr unsigned kSlotShift = 14;
    static constexpr uint64_t kSlotNs = 1ull << kSlotShift;
    static constexpr uint32_t kSlots = 1u << 16;
    static constexpr uint32_t kNone = UINT32_MAX;

    struct Item {
        uint64_t release_ns = 0;
        uint64_t arrived_ns = 0;
        uint64_t handle = 0;  // the caller's: an mbuf, a replay record
        uint32_t next = kNone;
        uint16_t rule = 0;  // the index of the rule that holds it, in the current ruleset
    };

    explicit ShapeWheel(uint32_t capacity = 0);

    uint32_t size() const { return size_; }
    uint32_t capacity() const { return static_cast<uint32_t>(items_.size()); }
    bool full() const { return free_ == kNone; }

    // Holds an item (size() < capacity()); returns its index, for item(). An item due before
    // the wheel's cursor (the last pop's time) is due at the next pop.
    uint32_t push(uint64_t release_ns, uint64_t arrived_ns, uint16_t rule);
    Item &item(uint32_t index) { return items_[index]; }

    // Moves up to max items due by now_ns to out, slot by slot (FIFO within a slot); returns
    // how many. whole_slots: only slots that ended by now_ns are read (the live worker: no slot
    // is read twice, at the cost of releasing up to a slot late); otherwise also the slot now_ns
    // is in, item by item (replay: each frame leaves exactly at its time).
    unsigned pop_due(uint64_t now_ns, bool whole_slots, Item *out, unsigned max);

    // Moves up to max items, due or not, to out (a stopping worker).
    unsigned pop_any(Item *out, unsigned max);

    // Calls f(item) for every item held; an item for which it returns false is removed (and
    // its slot returned to the pool). Reads every slot: for reloads, not packets.
    template <class F>
    void retain_if(F f) {
        for (uint32_t s = 0; s < kSlots && size_ > 0; ++s) {
            uint32_t prev = kNone;
            for (uint32_t i = heads_[s]; i != kNone;) {
                const uint32_t next = items_[i].next;
                if (f(items_[i])) {
                    prev = i;
                } else {
                    unlink(s, prev, i);
                }
                i = next;
            }
        }
    }

  private:
    static uint32_t slot_of(uint64_t ns) {
        return static_cast<uint32_t>(ns >> kSlotShift) & (kSlots - 1);
    }
    // Removes item i (after prev, kNone if first) from slot s and frees it.
    void unlink(uint32_t s, uint32_t prev, uint32_t i);
    // Moves slot s's items due by until_ns to out (up to max); false if max stopped it.
    bool drain(uint32_t s, uint64_t until_ns, Item *out, unsigned max, unsigned *n);
    // The earliest release time held (a walk of every slot).
    uint64_t earliest() const;

    std::vector<Item> items_;
    std::vector<uint32_t> heads_;
    std::vector<uint32_t> tails_;
    uint32_t free_ = kNone;  // free items, through next
    uint32_t size_ = 0;
    uint64_t cursor_ns_ = 0;  // the start of the first slot not yet wholly read
};

}  // namespace floodgate
