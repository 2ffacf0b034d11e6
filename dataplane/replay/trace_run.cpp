#include "dataplane/replay/trace_run.h"

#include <algorithm>
#include <cstring>

#include "dataplane/pipeline/merge.h"

namespace floodgate {

TraceRun::TraceRun(const std::vector<Pipeline *> &cores, const ReplayOptions &opt,
                   const TraceOutputs &out, BoxesSync *boxes)
    : cores_(cores),
      opt_(opt),
      out_(out),
      boxes_(boxes),
      steering_(cores.front()->rules().steering()),
      window_(std::min<size_t>(size_t{kMaxBurst} * cores.size(), kMaxWindow)),
      by_core_(cores.size()) {}

bool TraceRun::run(PcapReader &in, BinRecorder *bins, std::string *error) {
    std::vector<Consumption> scratch;
    const bool merging = cores_.size() > 1 && boxes_ == nullptr;
    uint64_t clock_ns = 0, next_merge_ns = 0;
    uint64_t bin_end_ns = bins != nullptr ? bins->end_ns() : UINT64_MAX;
    for (uint64_t index = 0; in.next(&window_[n_].rec); ++index) {
        // Captures are not always in time order; the limiter's clock never runs backwards.
        clock_ns = std::max(clock_ns, window_[n_].rec.ts_ns);
        if (index == 0) {
            next_merge_ns = clock_ns + opt_.merge_interval_ns;
            if (boxes_ != nullptr) boxes_->start(cores_, clock_ns);
        }
        const bool merge_due = merging && clock_ns >= next_merge_ns;
        const bool sync_due = boxes_ != nullptr && clock_ns >= boxes_->next_sync_ns();
        if (merge_due || sync_due || clock_ns >= bin_end_ns) [[unlikely]] {
            decide_window_but_newest();
            while (sync_due && clock_ns >= boxes_->next_sync_ns())
                if (!boxes_->sync(error)) return false;
            if (clock_ns >= bin_end_ns) {
                bins->close_before(clock_ns);
                bin_end_ns = bins->end_ns();
            }
            if (merge_due) {
                merge_cores(cores_, next_merge_ns, &scratch);
                // Idle gaps: no consumption to merge in between, so skip to the next one.
                next_merge_ns +=
                    (clock_ns - next_merge_ns) / opt_.merge_interval_ns * opt_.merge_interval_ns +
                    opt_.merge_interval_ns;
            }
        }
        place(index, clock_ns);
        if (n_ == window_.size()) decide_window();
    }
    decide_window();
    release_until(UINT64_MAX);  // what is still held leaves at its time, after the capture
    // syn-proxy's held frames whose server never answered within the capture: dropped.
    for (Pipeline *core : cores_)
        core->proxy_drop_held([&](uint64_t h) {
            if (out_.drop != nullptr) out_.drop->write(held_[h]);
            free_held_.push_back(h);
        });
    *error = in.error();
    return error->empty();
}

void TraceRun::place(uint64_t index, uint64_t now_ns) {
    Slot &s = window_[n_];
    s.now_ns = now_ns;
    s.back = false;
    s.core = steering_.by_source ? 0 : static_cast<unsigned>(index % cores_.size());
    FrameAddress address;
    if ((steering_.by_source || !opt_.inside.empty()) &&
        frame_address(s.rec.data.data(), s.rec.captured_len(), false, &address)) {
        s.back = from_inside(address);
        // A frame going out belongs to its destination's owner: the reply's source's.
        if (s.back) frame_address(s.rec.data.data(), s.rec.captured_len(), true, &address);
        if (steering_.by_source) s.core = address_owner(address, steering_, cores_.size());
    }
    by_core_[s.core].push_back(static_cast<uint32_t>(n_));
    ++n_;
}

bool TraceRun::from_inside(const FrameAddress &source) const {
    IpAddr src;
    std::memcpy(src.data(), source.addr, src.size());
    for (const Prefix &p : opt_.inside)
        if (prefix_contains(p, source.family, src)) return true;
    return false;
}

void TraceRun::decide_window_but_newest() {
    const size_t newest = n_;
    decide_window();
    std::swap(window_[0].rec, window_[newest].rec);
}

void TraceRun::decide_window() {
    for (size_t c = 0; c < cores_.size(); ++c) {
        const std::vector<uint32_t> &mine = by_core_[c];
        for (size_t at = 0; at < mine.size();) {
            const bool back = window_[mine[at]].back;
            size_t end = at;
            while (end < mine.size() && end - at < kMaxBurst && window_[mine[end]].back == back)
                ++end;
            decide_burst(*cores_[c], &mine[at], static_cast<uint16_t>(end - at), back);
            at = end;
        }
        by_core_[c].clear();
    }
    for (size_t i = 0; i < n_; ++i) write(window_[i]);
    n_ = 0;
}

void TraceRun::decide_burst(Pipeline &core, const uint32_t *slots, uint16_t n, bool back) {
    // Zeroed: GCC's -O1 (the ASan build) cannot see that the first n are all written.
    const uint8_t *frames[kMaxBurst] = {};
    uint32_t wire[kMaxBurst] = {}, captured[kMaxBurst] = {};
    uint64_t now_ns[kMaxBurst] = {};
    Verdict verdicts[kMaxBurst] = {};
    for (uint16_t i = 0; i < n; ++i) {
        const Slot &s = window_[slots[i]];
        frames[i] = s.rec.data.data();
        wire[i] = s.rec.wire_len();
        captured[i] = s.rec.captured_len();
        now_ns[i] = s.now_ns;
    }
    if (back) {
        core.observe_returning(frames, wire, n, now_ns, captured);
        for (uint16_t i = 0; i < n; ++i) {
            Slot &s = window_[slots[i]];
            s.verdict = Verdict::pass;
            if (core.proxying()) proxy_from_server(core, s);
        }
        sweep_proxy(core, window_[slots[n - 1]]);
        return;
    }
    // With shape rules, frames of one time at a time, after what has left by then is
    // taken from the cores: a live worker releases every loop pass, so a held frame whose
    // time has come never counts against the share a later frame meets.
    const bool shaping = core.rules().has_shape();
    for (uint16_t at = 0, end; at < n; at = end) {
        end = n;
        if (shaping) {
            for (end = at; end < n && now_ns[end] == now_ns[at];) ++end;
            collect(now_ns[at]);
        }
        const auto m = static_cast<uint16_t>(end - at);
        core.decide(frames + at, wire + at, m, now_ns + at, verdicts, captured + at);
        for (uint16_t i = 0; i < m; ++i) {
            Slot &s = window_[slots[at + i]];
            s.verdict = verdicts[i];
            if (s.verdict == Verdict::delay) core.hold(i, keep(s.rec));
            if (s.verdict == Verdict::proxy) proxy_from_client(core, i, s);
            // The answer is built now: the plan lasts until the core's next burst.
            s.answered = verdicts[i] == Verdict::answer && out_.answers != nullptr &&
                         build_answer_record(core, i, s.rec, &s.answer);
        }
    }
    sweep_proxy(core, window_[slots[n - 1]]);
}

void TraceRun::set_len(PcapRecord *r, uint32_t len) {
    r->data.resize(len);
    r->orig_len = len;
}

bool TraceRun::build_answer_record(const Pipeline &core, uint16_t i, const PcapRecord &r,
                                   PcapRecord *answer) {
    *answer = r;  // an answered frame is whole: captured = wire length
    const uint32_t len = build_answer(core.answer_plan(i), core.packet_info(i), answer->data.data(),
                                      answer->captured_len());
    if (len == 0) return false;  // the plan did not fit the frame (never expected)
    answer->data.resize(len);
    answer->orig_len = len;
    return true;
}

void TraceRun::write(Slot &s) {
    release_until(s.now_ns);
    if (s.verdict == Verdict::pass) {
        out_.pass->write(s.rec);
    } else if (s.verdict != Verdict::delay) {  // delay: written when released
        if (out_.drop != nullptr) out_.drop->write(s.rec);
        if (s.answered) out_.answers->write(s.answer);
    }
    for (const auto &[handle, sent] : s.then) {
        if (sent)
            out_.pass->write_at(held_[handle], s.now_ns);
        else if (out_.drop != nullptr)
            out_.drop->write(held_[handle]);
        free_held_.push_back(handle);
    }
    s.then.clear();
}

uint64_t TraceRun::keep(const PcapRecord &r) {
    if (free_held_.empty()) {
        held_.push_back(r);
        return held_.size() - 1;
    }
    const uint64_t h = free_held_.back();
    free_held_.pop_back();
    held_[h] = r;
    return h;
}

void TraceRun::collect(uint64_t now_ns) {
    Pipeline::Released out[kMaxBurst];
    for (Pipeline *core : cores_) {
        if (core->holding() == 0) continue;
        unsigned n;
        while ((n = core->release(now_ns, false, out, kMaxBurst)) > 0) {
            for (unsigned i = 0; i < n; ++i)
                leaving_.push_back({out[i].release_ns, out[i].handle, out[i].sent});
            leaving_sorted_ = false;
        }
    }
}

void TraceRun::release_until(uint64_t now_ns) {
    collect(now_ns);
    if (leaving_.size() == leaving_at_) return;
    if (!leaving_sorted_) {
        std::stable_sort(leaving_.begin() + static_cast<std::ptrdiff_t>(leaving_at_),
                         leaving_.end(),
                         [](const auto &a, const auto &b) { return a.release_ns < b.release_ns; });
        leaving_sorted_ = true;
    }
    for (; leaving_at_ < leaving_.size() && leaving_[leaving_at_].release_ns <= now_ns;
         ++leaving_at_) {
        const Leaving &l = leaving_[leaving_at_];
        PcapRecord &r = held_[l.handle];
        if (l.sent)
            out_.pass->write_at(r, l.release_ns);
        else if (out_.drop != nullptr)
            out_.drop->write(r);
        free_held_.push_back(l.handle);
    }
    if (leaving_at_ == leaving_.size()) {
        leaving_.clear();
        leaving_at_ = 0;
    }
}

}  // namespace floodgate
