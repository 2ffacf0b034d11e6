// One worker core's decision for a burst of frames: parse, allow/block prefixes, every matching
// rule's GCRA check against the core's LimitTable, verdict, commit. The same code serves the
// live path (frames from mbufs, one clock read per loop pass, pipelined across bursts:
// prepare() and decide_prepared()) and `floodgate replay` (frames from a pcap, each with its
// own timestamp, one burst at a time: decide()).
//
// Hot-path rules: no locks, allocation, exceptions, syscalls or logging in decide(), prepare()
// or decide_prepared(). Every buffer is sized when the pipeline is built.
//
// Counters are plain: only this core writes them. Another thread reads them through
// read_stats(): while the core runs, it makes the copy itself between two bursts
// (serve_reads(), two loads per loop pass when nobody asks), so a reading is consistent by
// construction (every invariant of dataplane/api/stats.h holds in it, top offenders included)
// and can never be starved by a busy core, as a sequence-count reader copying a whole
// summary between bursts of refusals would be.
//
// One concern a file: the decision's stages (pipeline.cpp), one packet's verdict from its
// rules' checks (pipeline_inline.h, inlined into stage two, and rule_checks.cpp), the refusal's
// answer (answer_refusal.cpp), adaptive limits and their response samples (adaptive.cpp),
// syn-auth verification (syn_auth.cpp), trust classes and the marks behind them (trust.cpp),
// this core's side of the merge (publish.cpp) and the readings of its counters
// (read_stats.cpp). Two parts it holds have their own state: the shaper's held packets
// (shaper.h) and the syn-proxy's connections (syn_proxy_path.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "dataplane/answer/answer.h"
#include "dataplane/answer/syn_cookie.h"
#include "dataplane/api/stats.h"
#include "dataplane/core/geometric_sampler.h"
#include "dataplane/core/heavy_hitters.h"
#include "dataplane/core/limit_table.h"
#include "dataplane/core/remembered_filter.h"
#include "dataplane/core/response_samples.h"
#include "dataplane/core/ruleset.h"
#include "dataplane/pipeline/cluster_ledger.h"
#include "dataplane/pipeline/merge.h"
#include "dataplane/pipeline/refusal_samples.h"
#include "dataplane/pipeline/shaper.h"
#include "dataplane/pipeline/syn_proxy_path.h"

namespace floodgate {

inline constexpr uint16_t kMaxBurst = 32;
static_assert(kMaxBurst <= PrefixTable::kMaxBulk, "a burst is classified in one lookup call");
// Buckets the expiry sweep visits per burst: at 10 Mpps (312k bursts/s) a 1M-entry table
// (263k buckets) is swept every ~0.2 s, for 4 x 128 bytes of extra reads per burst.
inline constexpr uint32_t kSweepBucketsPerBurst = 4;

// How many table lookups ahead to prefetch when the lookups are issued one by one
// (perf/bench_table). The pipeline itself does not look ahead by a count: it prefetches each
// check's buckets in stage 1 as soon as its hash is known, or, pipelined, spread over the
// older burst's stage 2 (prepare()); bench_decision chose both (perf/results/notes.md).
inline constexpr unsigned kPrefetchAhead = 32;

// Refusals of a rule a core counts one by one each epoch (a second) among its top offenders
// before, with top_offenders: sampled, it counts only sampled ones (GeometricSampler): a quiet
// rule's counts stay exact, a flood's cost no summary update a refusal.
inline constexpr uint32_t kCountedRefusalsPerEpoch = 1024;

// answer: the packet is not forwarded; answer_plan(i) says what to send back in its place
// (build_answer, dataplane/answer/answer.h), out of the port it came in on.
// delay: a shape rule holds it; the caller hands it over (hold()) and sends it on when
// release() gives it back, at its time.
// proxy: passed, toward a syn-proxy rule's servers: the caller hands it to proxy_client() with
// its bytes writable and does what the step says (it may belong to a proxied connection).
enum class Verdict : uint8_t { pass, drop, answer, delay, proxy };

class Pipeline {
  public:
    // The table belongs to this core alone and must outlive the pipeline. core is this
    // pipeline's index into every rule's RuleState::per_core (< RuleSet::cores()).
    Pipeline(const RuleSet *rules, LimitTable *table, unsigned core = 0);

    // The ruleset the next decide() uses (a live worker reads LiveRuleSet once per loop pass).
    // It must stay alive until then; rules with a state shared with the previous ruleset keep
    // counting where it left off.
    void set_rules(const RuleSet *rules) {
        if (rules->serial() != serial_) adopt(rules);
    }

    // Decides frames[0..n) (n <= kMaxBurst); frame i was lens[i] bytes on the wire and arrived
    // at now_ns[i]. captured_lens, when not null, says how many of those bytes are present
    // (a replayed capture cut by its snap length); otherwise all of them are.
    // Nothing may be prepared (below) and not yet decided.
    void decide(const uint8_t *const *frames, const uint32_t *lens, uint16_t n,
                const uint64_t *now_ns, Verdict *verdicts, const uint32_t *captured_lens = nullptr);

    // The same decision pipelined across bursts (the worker): prepare() runs a burst's stage
    // 1 (parse, classify, key, hash) and keeps it; decide_prepared() gives the verdicts of the
    // oldest prepared burst and, if a newer one is prepared, prefetches that one's table
    // buckets as it goes, a few per packet, so that the newer burst's cache misses are served
    // while the older one is decided. A few per packet, rather than all at once or only when
    // the newer burst's own decision starts: a core stalls once its outstanding misses are
    // full, so a burst of prefetches costs what it waits for (bench_decision at 16M keys,
    // perf/results/notes.md). At most two bursts prepared; the arrays given to prepare() must
    // stay as they are until their burst is decided, except now_ns, which stage 1 does not
    // read: it need only hold the times when the burst is decided. Verdicts are decide()'s on
    // the same bursts: stage 1 reads no limiter state, and a burst prepared under an older
    // ruleset than set_rules() last gave is prepared again before it is decided.
    // prefetch_now: the burst will be decided before another is prepared (a partial burst,
    // the queue drained), so its buckets are prefetched as stage 1 keys it, as decide() does.
    void prepare(const uint8_t *const *frames, const uint32_t *lens, uint16_t n,
                 const uint64_t *now_ns, const uint32_t *captured_lens = nullptr,
                 bool prefetch_now = false);
    // Returns the decided burst's n (verdicts[0..n)); 0 when nothing was prepared.
    uint16_t decide_prepared(Verdict *verdicts);
    unsigned prepared() const { return prepared_; }
    // Frames going the other way, inside to outside (they are forwarded unjudged): a reply
    // from the protected side (TCP with ACK and neither SYN nor RST: data, an ACK, a FIN, never
    // a SYN-ACK, which any spoofed SYN gets; UDP from port 53: a DNS response) marks its
    // destination established (EstablishedOptions) for the aggregate rules' trust classes.
    // Nothing to do when no rule has an aggregate key.
    void observe_returning(const uint8_t *const *frames, const uint32_t *lens, uint16_t n,
                           const uint64_t *now_ns, const uint32_t *captured_lens = nullptr);

    // For a frame of the last burst decided whose verdict is answer: what to build, and from
    // what (until the next prepare() or decide()).
    const AnswerPlan &answer_plan(uint16_t i) const { return bursts_[decided_].plans[i]; }
    const PacketInfo &packet_info(uint16_t i) const { return bursts_[decided_].infos[i]; }

    // Shaping (action: shape; shaper.h). A packet a shape rule would refuse waits, if its
    // key's queue has room and fewer than capacity packets wait on this core (else it is
    // refused, shape_dropped): the verdict is delay, and the caller hands it over with hold()
    // before the next prepare() or decide(). release() gives back, in order, those whose time
    // has come by now_ns, and those a reload dropped (sent false): whole_slots as
    // ShapeWheel::pop_due. drop_held() gives back everything, dropped (a stopping core). Set
    // the capacity before the core runs (0, the default: a shape rule drops its excess).
    using Released = Shaper::Released;
    void set_hold_capacity(uint32_t packets) { shaper_.set_capacity(packets); }
    void hold(uint16_t i, uint64_t handle) {
        shaper_.set_handle(bursts_[decided_].held_item[i], handle);
    }
    uint32_t holding() const { return shaper_.holding(); }
    unsigned release(uint64_t now_ns, bool whole_slots, Released *out, unsigned max) {
        return shaper_.release(now_ns, whole_slots, out, max);
    }
    unsigned drop_held(Released *out, unsigned max) { return shaper_.drop_all(out, max); }

    // Adaptive limits (limit.adaptive; adaptive.cpp). The worker calls tick() once a loop
    // pass, busy or not: it keeps the core's clock (for readings: whether a learned rate is
    // stale) and ends response samples that waited past their target, also when no packet
    // comes. Replay needs no tick: its bursts do the same.
    void tick(uint64_t now_ns) {
        clock_ns_ = now_ns;
        if (now_ns >= epoch_end_ns_) [[unlikely]]
            end_epoch(now_ns);
        ticked_ = true;
        if (samples_.active() > 0) [[unlikely]]
            sweep_samples(now_ns, 4);
    }

    // The secret of syn-auth cookies (syn_cookie.h); every core of a dataplane has the same.
    // syn-proxy's cookies are under a key derived from it (proxy_cookie.h).
    void set_cookie_key(const CookieKey &key) {
        cookie_key_ = key;
        proxy_.set_key(key);
    }

    // syn-proxy (syn_proxy_path.h). The connection table (this core's, outliving the
    // pipeline) is given before the core runs; without one a syn-proxy rule challenges as
    // syn-auth does (counted in proxy_table_full). Each step's frame is written in place
    // (SynProxyPath::Out): a server_ack's held frames go next (take each back with
    // proxy_take_held() and pass it to proxy_held()).
    using ProxyOut = SynProxyPath::Out;
    using ProxyFrame = SynProxyPath::Frame;
    void enable_syn_proxy(ProxyFlows *flows) { proxy_.enable(flows); }
    bool proxying() const { return proxy_.active(); }
    // A frame of the last burst decided whose verdict was proxy (its length and time are read
    // from the arrays the burst was decided with, which must still hold them).
    ProxyOut proxy_client(uint16_t i, uint8_t *frame, uint32_t cap);
    ProxyOut proxy_held(const ProxyFrame &frame, uint64_t now_ns) {
        return proxy_.from_held(frame, now_ns);
    }
    ProxyOut proxy_server(const ProxyFrame &frame, uint64_t now_ns) {
        return proxy_.from_server(frame, now_ns);
    }
    void proxy_hold(ProxyFlow *flow, uint64_t handle) { proxy_.hold(flow, handle); }
    unsigned proxy_take_held(ProxyFlow *flow, uint64_t *out) { return proxy_.take_held(flow, out); }
    template <class F>
    void proxy_sweep(uint64_t now_ns, uint32_t n, F &&release) {
        proxy_.sweep(now_ns, n, release);
    }
    template <class F>
    void proxy_drop_held(F &&release) {
        proxy_.drop_held(release);
    }
    // Whether the port answers leave by computes IPv4, TCP and UDP checksums itself
    // (AnswerPlan::offload_checksums).
    void set_checksum_offload(bool on) { checksum_offload_ = on; }

    // Cross-core merge. Off by default (one core has nothing to merge). publish() appends this
    // core's consumption since the last call and forgets it; apply() charges another core's
    // consumption to this core's TATs as if it arrived at now_ns.
    void enable_merge();
    // Samples this core's refusals of escalating rules for the XDP tier, from now on (before
    // the worker runs); the control thread drains them (refusal_samples.h).
    void enable_refusal_samples(uint64_t seed);
    RefusalSampler *refusal_samples() { return refusal_samples_.get(); }
    // The seed of the sampled top offenders' draws (a fixed one per core until given).
    void seed_top_samples(uint64_t seed) { top_samples_ = GeometricSampler(seed); }
    void publish(std::vector<Consumption> *out);
    void apply(const Consumption &c, uint64_t now_ns);

    // What this core has counted, as it stood at one instant: rules[i] and top_refused[i]
    // are this core's share of rule i of `rules` (the RuleSet the caller reads with, which it
    // keeps alive; it may be newer than the one this core decides with). Any thread; one
    // reading at a time per core. False if a serving core did not answer within a second.
    // From a serving core, the top offenders of rules past the first kSummariesPerPass that
    // changed may be a loop pass or a few newer than the counters (no invariant joins them).
    struct Stats {
        uint64_t clock_ns = 0;  // the core's clock when it was read (its last tick or burst)
        WorkerCounters counters;
        LimitTableStats table;
        std::vector<RuleCounters> rules;
        std::vector<HeavyHitters> top_refused;
        std::vector<DestinationSummary> destinations;  // as the core's last epoch ended
        std::vector<EpochKeys> keys;                   // the same
    };
    bool read_stats(const RuleSet &rules, Stats *out) const;
    static constexpr unsigned kSummariesPerPass = 8;

    // The core's side of read_stats, for a core that runs on its own thread: from
    // start_serving_reads() (on the thread that starts the core, before it decides anything)
    // to stop_serving_reads() (on the core, after its last decide) readers wait for
    // serve_reads(), which the core calls between bursts; otherwise they copy directly, the
    // core being idle or their own thread.
    void start_serving_reads();
    void stop_serving_reads() { serving_.store(false, std::memory_order_release); }
    void serve_reads() {
        if (read_asked_.load(std::memory_order_acquire) !=
            read_served_.load(std::memory_order_relaxed)) [[unlikely]]
            serve_read();
        if (shared_asked_.load(std::memory_order_acquire) !=
            shared_served_.load(std::memory_order_relaxed)) [[unlikely]]
            serve_shared();
    }

    // The cluster ledger (cluster_ledger.h): appends to *out what this core admitted for the
    // keys of shared rules since the last take, and forgets it. Any thread, one at a time;
    // served by the core between bursts like read_stats (false if it did not answer within a
    // second: the records stay for the next take).
    bool take_shared(std::vector<SharedRecord> *out);

    const LimitTable &table() const { return *table_; }
    const RuleSet &rules() const { return *rules_; }
    unsigned core() const { return core_; }

  private:
    // One (packet, matching rule) pair of a burst: its key, hash, and what the check found.
    struct Check {
        LimitKey key;
        uint64_t hash;
        LimitEntry *entry;  // nullptr: the table was full for this key
        bool reserved;      // entry is a reservation for a fresh key (LimitTable::acquire)
        uint64_t new_tat_ns;
        // Prefetched with the key's buckets: for a syn-auth rule the hash of the source's
        // verified_key, for an aggregate rule of its established key (its class's first
        // lookup, needed under a flood); else 0.
        uint64_t aux_hash;
        uint64_t known_hash;  // aggregate rules: the source's known mark (also prefetched)
        uint16_t rule;
        bool admitted;
        bool unverified;  // syn-auth: refused because the source has not proven itself
        // Aggregate rules: the source's class, when the new sources' tolerance refused it;
        // by_reserve: admitted all the same, by the more trusted class's tolerance.
        TrustClass cls;
        bool by_reserve;
    };
    // The frame being decided, for its answer.
    struct Frame {
        const uint8_t *bytes;
        uint32_t len;
        uint32_t captured;
    };

    // One burst between its stage 1 and its verdicts. The frames, lengths and times are the
    // caller's (prepare()).
    struct Burst {
        const uint8_t *const *frames = nullptr;
        const uint32_t *lens = nullptr;
        const uint32_t *captured = nullptr;  // never null: lens when all was captured
        const uint64_t *now_ns = nullptr;
        uint16_t n = 0;
        uint64_t serial = 0;      // of the ruleset it was keyed with
        bool prefetched = false;  // its checks' buckets
        unsigned n_checks = 0;
        // kMaxBurst x (kMaxRules + 1): any ruleset fits. Left uninitialised, so that only the
        // pages a ruleset's checks use are ever touched (790 KB a burst otherwise, zeroed per
        // core at start: 100 MB for 64 cores).
        std::unique_ptr<Check[]> checks;
        uint16_t first_check[kMaxBurst + 1];
        PacketInfo infos[kMaxBurst];
        ParseStatus status[kMaxBurst];
        PrefixClass source[kMaxBurst];
        uint16_t proxy_rule[kMaxBurst];  // the syn-proxy rule it goes toward, or kNoProxyRule
        const RuleBits *dst_rules[kMaxBurst];
        AnswerPlan plans[kMaxBurst];
        uint32_t held_item[kMaxBurst];  // delay: the ShapeWheel item holding it
        // Frame i's bytes, built where an answer or a sample needs them, not for every packet.
        Frame frame(uint16_t i) const { return Frame{frames[i], lens[i], captured[i]}; }
        void take(const uint8_t *const *in_frames, const uint32_t *in_lens, uint16_t count,
                  const uint64_t *times, const uint32_t *captured_lens) {
            frames = in_frames;
            lens = in_lens;
            captured = captured_lens != nullptr ? captured_lens : in_lens;
            now_ns = times;
            n = count;
        }
    };
    // The decision's stages (pipeline.cpp).
    void stage_one(Burst &b, bool prefetch);
    void stage_two(Burst &b, Verdict *verdicts, Burst *ahead);
    // Stage two's parts, inlined into it so that its counts stay in registers (pipeline.cpp).
    struct BurstCounts;
    [[gnu::always_inline]] bool settled_verdict(const Burst &b, uint16_t i, BurstCounts &counts,
                                                Verdict *v);
    [[gnu::always_inline]] void decide_unmatched(const Burst &b, Verdict *verdicts,
                                                 BurstCounts &counts);
    [[gnu::always_inline]] unsigned decide_in_order(Burst &b, Verdict *verdicts, Burst *ahead,
                                                    BurstCounts &counts);
    void prefetch_check(const Check &c);
    void prefetch_checks(Burst &b, unsigned from);
    [[gnu::cold]] void adopt(const RuleSet *rules);

    // A packet's verdict from its rules' checks (n_checks of them, at least one), inlined into
    // stage two (pipeline_inline.h).
    [[gnu::always_inline]] Verdict decide_one(Burst &burst, uint16_t packet, Check *checks,
                                              unsigned n_checks, uint64_t now_ns);
    [[gnu::always_inline]] void check(const PacketInfo &info, Check *checks, unsigned n_checks,
                                      Check &c, uint64_t now_ns);
    [[gnu::always_inline]] uint64_t check_limit(const CompiledRule &r, Check &c, uint64_t now_ns);
    RuleCoreState &mine(const CompiledRule &r) const { return *mine_[r.index]; }
    // The limit a rule holds packets to on this core: its own, or an adaptive rule's learned
    // one (refresh_adaptive), and a class's allowance of it.
    const LimitProfile &limit_of(const CompiledRule &r) const {
        return r.adaptive ? mine(r).adapted : r.limit;
    }
    uint64_t allowance_of(const CompiledRule &r, TrustClass c) const {
        const unsigned k = static_cast<unsigned>(c);
        return r.adaptive ? mine(r).adapted_allowance[k] : r.class_allowance[k];
    }
    // Adaptive limits (adaptive.cpp): each adaptive rule's learned rate read into this core's
    // profile, once a burst; the connections they admit sampled, and the samples fed back.
    [[gnu::cold]] void refresh_adaptive(uint64_t now_ns);
    [[gnu::cold]] void note_connection(const CompiledRule &r, const PacketInfo &info,
                                       uint64_t now_ns);
    [[gnu::cold]] void client_segment(const PacketInfo &info, const Frame &frame, uint64_t now_ns);
    void server_segment(const PacketInfo &info, const uint8_t *frame, uint32_t captured,
                        uint64_t now_ns);
    void sweep_samples(uint64_t now_ns, unsigned slots);
    void feed(const ResponseSamples::Sample &s, uint64_t now_ns);
    // A refusal noted: sampled for escalation, and counted among the rule's top offenders
    // (pipeline_inline.h). What the checks call out of line (rule_checks.cpp): a key meeting
    // a full table, the escalation's sample, and a refusal's place among the top offenders.
    [[gnu::always_inline]] void note_refusal(const PacketInfo &info, const Check &c);
    [[gnu::cold]] bool check_table_full(const CompiledRule &r, Check *c, uint64_t now_ns);
    void sample_for_escalation(const CompiledRule &r, const PacketInfo &info, const Check &c);
    void add_top_offender(const CompiledRule &r, RuleCoreState &state, const PacketInfo &info,
                          const Check &c, uint32_t weight);
    // Where the rule's packet goes (its destinations, per epoch; rule_checks.cpp ends epochs).
    [[gnu::always_inline]] void note_destination(const CompiledRule &r, RuleCoreState &state,
                                                 const PacketInfo &info, const Check &c);
    [[gnu::cold]] void end_epoch(uint64_t now_ns);

    // A shape rule's refusal: whether the packet waits (its TAT is then committed as an
    // admission's; shaper_.last_held() is its wheel item) or is refused.
    bool shape_hold(const CompiledRule &r, const Check &c, uint64_t now_ns) {
        return shaper_.hold_refused(r, mine(r), c.entry != nullptr, c.new_tat_ns, c.cls, now_ns);
    }

    // The refusal's answer: a rule that answers nothing drops it here (pipeline_inline.h);
    // an answer and the answer caps are planned out of line (answer_refusal.cpp).
    [[gnu::always_inline]] Verdict answer_refusal(const PacketInfo &info, const Frame &frame,
                                                  const Check &c, uint64_t now_ns,
                                                  AnswerPlan *plan);
    Verdict plan_refusal_answer(const PacketInfo &info, const Frame &frame, const Check &c,
                                uint64_t now_ns, AnswerPlan *plan);
    bool answer_cap_admits(const PacketInfo &info, uint64_t now_ns);

    // syn-auth verification (syn_auth.cpp).
    // The filter first: a source that never proved itself costs no table lookup.
    bool verified(uint64_t verified_hash, uint64_t now_ns) {
        return remembered_.may_contain(verified_hash) && live(verified_hash, now_ns);
    }
    [[gnu::cold]] bool take_cookie_reply(const PacketInfo &info, const PrefixClass &source,
                                         const RuleBits &dst, uint64_t now_ns);
    bool verify(const CompiledRule &r, const PacketInfo &info, uint64_t now_ns);
    [[gnu::cold]] void unverified_table_full(const CompiledRule &r, Check *c, uint64_t now_ns);

    static constexpr uint16_t kNoProxyRule = 0xffff;  // Burst::proxy_rule: toward none

    // Trust classes, established and known marks (trust.cpp).
    [[gnu::cold]] void admit_by_class(const CompiledRule &r, const PacketInfo &info,
                                      const Check *checks, unsigned n_checks, uint64_t tat_ns,
                                      uint64_t now_ns, Check *c);
    TrustClass trust_class(const PacketInfo &info, const Check &c, const Check *checks,
                           unsigned n_checks, uint64_t now_ns);
    bool live(uint64_t h, uint64_t now_ns) {
        const LimitEntry *e = table_->find(h);
        return e != nullptr && e->tat_ns > now_ns && e->tat_ns != kReservedTat;
    }
    enum class Remembered : uint8_t { yes, no_room, over_budget };
    Remembered remember_until(uint64_t h, uint64_t ttl_ns, uint64_t now_ns, bool budgeted,
                              bool published);
    // The hash of the mark that says the packet's source is established (tag kTagEstablished)
    // or known (kTagKnown).
    uint64_t mark_hash(const PacketInfo &p, uint32_t tag) const {
        const EstablishedProfile &est = rules_->established();
        return table_->hash(source_key(p, est.mask_hi, est.mask_lo, tag | p.family));
    }
    void mark_established(const PacketInfo &reply, uint64_t now_ns);

    // This core's side of the merge (publish.cpp).
    void note_admitted(LimitEntry *e, uint64_t hash, const LimitProfile &limit);
    // And of the cluster sync (cluster_take.cpp).
    [[gnu::cold]] void note_shared(const CompiledRule &r, const PacketInfo &info, const Check &c);
    [[gnu::cold]] void serve_shared();

    // Readings served by the core (read_stats.cpp).
    [[gnu::cold]] void serve_read();

    const RuleSet *rules_ = nullptr;
    uint64_t serial_ = 0;  // rules_->serial(): compared, not the pointer, which may be reused
    LimitTable *table_;
    unsigned core_;
    // This core's state of each rule of rules_, by rule index: one load instead of two per use.
    RuleCoreState *mine_[kMaxRules] = {};
    WorkerCounters counters_;
    bool merging_ = false;
    std::unique_ptr<RefusalSampler> refusal_samples_;
    GeometricSampler top_samples_{0x9e3779b97f4a7c15ull * (core_ + 1)};
    // Keys with LimitEntry::unpublished > 0 (capacity fixed); packets is filled in at publish.
    std::vector<Consumption> unpublished_;
    std::vector<Consumption> unpublished_verifications_;  // packets 0; capacity fixed
    // Every key remember_until or a verification record kept: the table starts empty with its
    // pipeline (live/dataplane.cpp, replay/replay.cpp), so no remembered key is missing from it.
    RememberedFilter remembered_;
    CookieKey cookie_key_;
    SynProxyPath proxy_;
    bool checksum_offload_ = false;
    uint64_t answer_core_tat_ns_ = 0;  // the per-core answer cap's GCRA state
    uint64_t mark_budget_tat_ns_ = 0;  // EstablishedProfile::mark_budget's GCRA state
    ResponseSamples samples_;
    uint64_t next_sample_ns_ = 0;  // no connection sampled before (kAdaptiveSampleGapNs)
    uint64_t clock_ns_ = 0;
    uint64_t epoch_end_ns_ = 0;  // when the destinations' current epoch ends (rate_baseline.h)
    bool ticked_ = false;        // a worker ticks every loop pass: the sweep is left to tick()
    Shaper shaper_{&counters_, mine_};
    // Two bursts: a prepared one waiting, and the one being decided or last decided (whose
    // plans the caller reads until the next burst is prepared in its place).
    Burst bursts_[2];
    unsigned oldest_ = 0;    // the oldest prepared burst, when prepared_ > 0
    unsigned prepared_ = 0;  // 0, 1 or 2
    unsigned decided_ = 0;   // the last burst decided

    // A reading asked of a serving core: the reader bumps read_asked_; the core copies its
    // counters and its own rules' shares into copy_ (its memory, sized before it started, so
    // a reader that gave up waiting leaves nothing dangling), the counters at one instant and
    // the top offenders that changed over the next passes, then sets read_served_ to it.
    struct CoreCopy {
        uint64_t asked = 0;       // the reading being served
        uint64_t serial = 0;      // of the ruleset it is served from
        size_t next_summary = 0;  // rules whose top offenders are done, of n_rules
        uint64_t clock_ns = 0;
        WorkerCounters counters;
        LimitTableStats table;
        size_t n_rules = 0;
        std::vector<const RuleState *> states;  // each kMaxRules long
        std::vector<RuleCounters> rules;
        std::vector<HeavyHitters> top_refused;
        std::vector<DestinationSummary> destinations;  // copied once an epoch
        std::vector<EpochKeys> keys;                   // with them
    };
    CoreCopy copy_;
    // The cluster ledger: the core counts into shared_; asked for it (shared_asked_), it adds
    // shared_ into shared_out_ and sets shared_served_; the taker empties shared_out_. A taker
    // that gave up leaves shared_out_ for the next one, so nothing is lost.
    ClusterLedger shared_;
    ClusterLedger shared_out_;
    std::mutex take_lock_;  // takers only
    std::atomic<uint64_t> shared_asked_{0};
    std::atomic<uint64_t> shared_served_{0};
    mutable std::mutex read_lock_;  // readers only: one reading at a time
    mutable std::atomic<uint64_t> read_asked_{0};
    std::atomic<uint64_t> read_served_{0};
    std::atomic<bool> serving_{false};
};

}  // namespace floodgate
