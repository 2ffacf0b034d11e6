// Running a capture through replay's cores (TraceRun): which core decides each frame, in
// which bursts, and where and when what they decided is written. trace_proxy.cpp has its
// syn-proxy steps.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "dataplane/pipeline/pipeline.h"
#include "dataplane/replay/bin_recorder.h"
#include "dataplane/replay/boxes.h"
#include "dataplane/replay/pcap_file.h"
#include "dataplane/replay/replay.h"

namespace floodgate {

// Where decided frames go: passed ones to PASS.pcap; dropped ones, answered included, to
// DROP.pcap; and what was sent in place of an answered one to ANSWERS.pcap, with its time.
struct TraceOutputs {
    PcapWriter *pass;
    PcapWriter *drop;     // may be null
    PcapWriter *answers;  // may be null
};

// Runs the trace through the cores.
//
// Frames are read into a window, each given to its core (round robin, or its source's owner
// under the steering; a frame going out, from --inside, its destination's owner; a frame with no
// IP address to read, core 0), and the window is decided core by core, in bursts of up to
// kMaxBurst frames of one direction in capture order, then written out in capture order.
// Deterministic, on packet time: a window is closed before the first frame at or past the
// next merge or the end of a --report bin, so every frame sees exactly the merges whose time
// it has passed, and is counted in its own bin. With one core this is the live worker's
// bursts; with several, each core decides its own frames in bursts as a live worker would.
class TraceRun {
  public:
    TraceRun(const std::vector<Pipeline *> &cores, const ReplayOptions &opt,
             const TraceOutputs &out, BoxesSync *boxes);

    // Returns false with *error on an I/O failure.
    bool run(PcapReader &in, BinRecorder *bins, std::string *error);

  private:
    // At most this many frames wait: 32 per core up to 64 cores.
    static constexpr size_t kMaxWindow = 2048;

    struct Slot {
        PcapRecord rec;
        PcapRecord answer;  // what is sent in its place, when answered
        uint64_t now_ns = 0;
        unsigned core = 0;
        bool back = false;  // went inside to outside: passed unjudged
        bool answered = false;
        Verdict verdict = Verdict::pass;
        // syn-proxy's held frames this one lets go (the server answered: sent after it;
        // refused or timed out: dropped), by handle (keep()).
        std::vector<std::pair<uint64_t, bool>> then;
    };

    // Gives window slot n_ (just read) its core and direction.
    void place(uint64_t index, uint64_t now_ns);

    bool from_inside(const FrameAddress &source) const;

    // Decides the window but for the frame just read into slot n_ (past a merge or a bin's
    // end), which then starts the next window.
    void decide_window_but_newest();

    void decide_window();

    void decide_burst(Pipeline &core, const uint32_t *slots, uint16_t n, bool back);

    // Room syn-proxy may need past a frame: its SYN to the server carries up to 12 bytes of
    // options over an ACK that may have none.
    static constexpr uint32_t kProxyRoom = 64;

    // A client's frame the pipeline gave to syn-proxy, as a live worker sends it: on
    // (rewritten, or as the server's SYN), held until the server answers, answered with a RST
    // (its connection failed), or dropped.
    void proxy_from_client(Pipeline &core, uint16_t i, Slot &s);

    // A frame from the inside while syn-proxy has connections: the server's SYN-ACK becomes
    // the ACK back to it (the held frames follow it), its RST goes to the client rewritten (the
    // held frames are dropped), its segments are rewritten.
    void proxy_from_server(Pipeline &core, Slot &s);

    void take_held(Pipeline &core, ProxyFlow *flow, bool send, Slot &s);

    // Connections past their timeouts, a few slots a burst; what they held is dropped after s.
    void sweep_proxy(Pipeline &core, Slot &s);

    static void set_len(PcapRecord *r, uint32_t len);

    static bool build_answer_record(const Pipeline &core, uint16_t i, const PcapRecord &r,
                                    PcapRecord *answer);

    void write(Slot &s);

    // A frame a shape rule holds, kept until it is released: its handle.
    uint64_t keep(const PcapRecord &r);

    // Takes from every core the held frames due by now_ns: before a burst is decided (so
    // that what has left no longer counts against the core's share, as on a live worker, which
    // releases every loop pass), and before a frame is written.
    void collect(uint64_t now_ns);

    // Writes the frames that left by now_ns, in order of their times (a core gives them in
    // slot order, two keys' of one slot in the order they were held), each stamped with its
    // time.
    void release_until(uint64_t now_ns);

    const std::vector<Pipeline *> &cores_;
    const ReplayOptions &opt_;
    const TraceOutputs &out_;
    BoxesSync *boxes_;  // --boxes: the cores are boxes, synced instead of merged
    const Steering &steering_;
    std::vector<Slot> window_;
    size_t n_ = 0;                                // slots in the window
    std::vector<std::vector<uint32_t>> by_core_;  // each core's slots, in capture order
    std::vector<PcapRecord> held_;                // frames shape rules hold, by handle
    std::vector<uint64_t> free_held_;
    struct Leaving {
        uint64_t release_ns;
        uint64_t handle;
        bool sent;
    };
    std::vector<Leaving> leaving_;  // taken from the cores, written from leaving_at_ on
    size_t leaving_at_ = 0;
    bool leaving_sorted_ = true;
};

}  // namespace floodgate
