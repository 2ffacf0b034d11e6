#include "dataplane/core/shape_wheel.h"

#include <algorithm>

namespace floodgate {

ShapeWheel::ShapeWheel(uint32_t capacity) : items_(capacity) {
    if (capacity == 0) return;  // holds nothing: no slots either
    heads_.assign(kSlots, kNone);
    tails_.assign(kSlots, kNone);
    for (uint32_t i = 0; i < capacity; ++i) items_[i].next = i + 1 < capacity ? i + 1 : kNone;
    free_ = 0;
}

uint32_t ShapeWheel::push(uint64_t release_ns, uint64_t arrived_ns, uint16_t rule) {
    const uint32_t i = free_;
    Item &it = items_[i];
    free_ = it.next;
    it = Item{release_ns, arrived_ns, 0, kNone, rule};
    // An empty wheel starts at the first item's arrival: nothing due before it is held.
    const uint64_t start = arrived_ns & ~(kSlotNs - 1);
    if (size_++ == 0 && start > cursor_ns_) cursor_ns_ = start;
    // Before the cursor, its own slot would not be read for a turn: the cursor's is next.
    const uint32_t s = slot_of(release_ns < cursor_ns_ ? cursor_ns_ : release_ns);
    if (tails_[s] == kNone)
        heads_[s] = i;
    else
        items_[tails_[s]].next = i;
    tails_[s] = i;
    return i;
}

void ShapeWheel::unlink(uint32_t s, uint32_t prev, uint32_t i) {
    const uint32_t next = items_[i].next;
    if (prev == kNone)
        heads_[s] = next;
    else
        items_[prev].next = next;
    if (tails_[s] == i) tails_[s] = prev;
    items_[i].next = free_;
    free_ = i;
    --size_;
}

bool ShapeWheel::drain(uint32_t s, uint64_t until_ns, Item *out, unsigned max, unsigned *n) {
    uint32_t prev = kNone;
    for (uint32_t i = heads_[s]; i != kNone;) {
        const uint32_t next = items_[i].next;
        if (items_[i].release_ns <= until_ns) {
            if (*n == max) return false;
            out[(*n)++] = items_[i];
            unlink(s, prev, i);
        } else {
            prev = i;  // a later turn's (or, in the slot now is in, a later time's)
        }
        i = next;
    }
    return true;
}

unsigned ShapeWheel::pop_due(uint64_t now_ns, bool whole_slots, Item *out, unsigned max) {
    unsigned n = 0;
    // Slots that ended by now, from the cursor on, each read for its own turn only (an item a
    // turn later stays, so that every item leaves in time order). Behind by a turn or more (a
    // replayed capture's idle gap), the cursor first jumps to the earliest item's slot: once,
    // and again after each turn walked.
    uint32_t walked = kSlots;
    while (size_ > 0 && cursor_ns_ + kSlotNs - 1 <= now_ns) {
        if (walked == kSlots) {
            walked = 0;
            if (now_ns - cursor_ns_ >= kSlots * kSlotNs)
                cursor_ns_ = std::max(cursor_ns_, earliest() & ~(kSlotNs - 1));
            if (cursor_ns_ + kSlotNs - 1 > now_ns) break;
        }
        if (!drain(slot_of(cursor_ns_), cursor_ns_ + kSlotNs - 1, out, max, &n)) return n;
        cursor_ns_ += kSlotNs;
        ++walked;
    }
    if (size_ == 0) {
        cursor_ns_ = std::max(cursor_ns_, now_ns & ~(kSlotNs - 1));
        return n;
    }
    if (!whole_slots && cursor_ns_ <= now_ns) drain(slot_of(cursor_ns_), now_ns, out, max, &n);
    return n;
}

uint64_t ShapeWheel::earliest() const {
    uint64_t t = UINT64_MAX;
    for (uint32_t s = 0; s < kSlots; ++s)
        for (uint32_t i = heads_[s]; i != kNone; i = items_[i].next)
            t = std::min(t, items_[i].release_ns);
    return t;
}

unsigned ShapeWheel::pop_any(Item *out, unsigned max) {
    unsigned n = 0;
    for (uint32_t s = 0; s < kSlots && size_ > 0 && n < max; ++s)
        while (heads_[s] != kNone && n < max) {
            out[n++] = items_[heads_[s]];
            unlink(s, kNone, heads_[s]);
        }
    return n;
}

}  // namespace floodgate
