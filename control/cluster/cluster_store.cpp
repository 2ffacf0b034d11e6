#include "control/cluster/cluster_store.h"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <memory>
#include <new>
#include <optional>
#include <utility>

#include "control/cluster/cluster_store_lua.h"
#include "dataplane/api/numbers.h"
#include "rules/redis_address.h"

namespace floodgate {

namespace {

using Clock = StoreLink::Clock;

// The sync script, cluster_store.lua, built in. KEYS: log, boxes. ARGV: box, cursor,
// box_timeout_ms, max_entries, max_entry_bytes, retention_ms, max_reply_payload_bytes, history
// ("1": a first sync reads the box_timeout before), then the pushes to append, five arguments
// each (seq, time, key id, MAC, payload; the first four empty when unsigned). Returns {cursor,
// live, skipped, joined, then per entry ID, box, seq, time, key id, MAC, payload}: the last ID
// read (or the cursor given when none was), the live boxes, the entries skipped as bad data,
// the last ID before this sync's pushes, and the other boxes' entries in stream order. A key
// holding another type is an error reply "FGBADKEY ...", and is left as it is.
constexpr const char *kScript = kClusterStoreLua;

constexpr std::string_view kBadKey = "FGBADKEY ";

// ---- Reading a reply within bounds ----

// One value of a reply, as the reader below builds it.
struct Reply {
    int type = 0;  // REDIS_REPLY_*
    long long integer = 0;
    std::string str;  // a string, status or error
    std::vector<std::unique_ptr<Reply>> elements;
};
using ReplyPtr = std::unique_ptr<Reply>;

// What the reply being read may still take. An array's elements are paid for when it is
// announced, before any is allocated: "*2147483647" costs nothing but a refusal.
struct ReplyBudget {
    size_t nodes = kMaxReplyNodes;
    bool exceeded = false;
};

// hiredis's reader, building our own objects: it calls these for each value, links nothing
// itself, and frees only the root (on a protocol error). A null return fails the read (as out
// of memory); nothing here throws into C.
Reply *new_value(const redisReadTask *task, int type, size_t elements) {
    auto *budget = static_cast<ReplyBudget *>(task->privdata);
    const size_t cost = elements + (task->parent == nullptr ? 1 : 0);  // the root pays for itself
    if (cost > budget->nodes) {
        budget->exceeded = true;
        return nullptr;
    }
    budget->nodes -= cost;
    auto *r = new (std::nothrow) Reply;
    if (r != nullptr) r->type = type;
    return r;
}

void *linked(const redisReadTask *task, Reply *r) {
    if (task->parent != nullptr)
        static_cast<Reply *>(task->parent->obj)->elements[static_cast<size_t>(task->idx)].reset(r);
    return r;
}

void *create_string(const redisReadTask *task, char *str, size_t len) {
    Reply *r = new_value(task, task->type, 0);
    if (r == nullptr) return nullptr;
    try {
        r->str.assign(str, len);
    } catch (const std::bad_alloc &) {
        delete r;
        return nullptr;
    }
    return linked(task, r);
}

void *create_array(const redisReadTask *task, int elements) {
    Reply *r = new_value(task, REDIS_REPLY_ARRAY, static_cast<size_t>(elements));
    if (r == nullptr) return nullptr;
    try {
        r->elements.resize(static_cast<size_t>(elements));
    } catch (const std::bad_alloc &) {
        delete r;
        return nullptr;
    }
    return linked(task, r);
}

void *create_integer(const redisReadTask *task, long long value) {
    Reply *r = new_value(task, REDIS_REPLY_INTEGER, 0);
    if (r == nullptr) return nullptr;
    r->integer = value;
    return linked(task, r);
}

void *create_nil(const redisReadTask *task) {
    Reply *r = new_value(task, REDIS_REPLY_NIL, 0);
    return r == nullptr ? nullptr : linked(task, r);
}

void free_value(void *r) {
    delete static_cast<Reply *>(r);
}

redisReplyObjectFunctions kReplyFunctions = {create_string, create_array, create_integer,
                                             create_nil, free_value};

// Sends `commands` (n of them, pipelined) and reads their n replies, all by the deadline and
// within kMaxReplyBytes received; *bytes counts what was received.
bool round_trip(StoreLink &link, const std::string &commands, size_t n, int timeout_ms,
                std::vector<ReplyPtr> *replies, uint64_t *bytes, std::string *error) {
    const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    if (!link.send_all(commands, deadline, error)) return false;
    std::unique_ptr<redisReader, decltype(&redisReaderFree)> reader(
        redisReaderCreateWithFunctions(&kReplyFunctions), redisReaderFree);
    if (reader == nullptr) {
        *error = "out of memory";
        return false;
    }
    ReplyBudget budget;
    reader->privdata = &budget;  // not redisReaderSetPrivdata: its (int) cast is not C++
    size_t received = 0;
    char buf[16 * 1024];
    while (replies->size() < n) {
        void *value = nullptr;
        if (redisReaderGetReply(reader.get(), &value) != REDIS_OK) {
            *error =
                budget.exceeded ? "reply too large" : std::string("bad reply: ") + reader->errstr;
            return false;
        }
        if (value != nullptr) {
            replies->emplace_back(static_cast<Reply *>(value));
            budget = ReplyBudget{};
            continue;
        }
        const size_t got = link.receive(buf, sizeof buf, deadline, error);
        if (got == 0) return false;
        *bytes += static_cast<uint64_t>(got);
        received += got;
        if (received > kMaxReplyBytes) {
            *error = "reply too large";
            return false;
        }
        if (redisReaderFeed(reader.get(), buf, got) != REDIS_OK) {
            *error = "out of memory";
            return false;
        }
    }
    // Nothing was asked for what follows: a reply to a command not sent.
    if (reader->pos < reader->len) {
        *error = "unexpected data after the reply";
        return false;
    }
    return true;
}

// One command as Redis reads it, an array of bulk strings, appended to *out.
// (redisFormatCommandArgv would copy it once more and give its length as an int.)
void append_command(std::string *out, const std::vector<std::string_view> &args) {
    out->append("*").append(std::to_string(args.size())).append("\r\n");
    for (std::string_view a : args)
        out->append("$").append(std::to_string(a.size())).append("\r\n").append(a).append("\r\n");
}

// ---- The payload ----

bool field_ok(std::string_view f, size_t max_bytes) {
    return !f.empty() && f.size() <= max_bytes && f.find_first_of("\t\n") == std::string_view::npos;
}

// `local` as payloads of at most max_bytes each, split at line ends; a delta outside the
// bounds is counted in *refused and left out.
std::vector<std::string> payloads(const std::vector<ClusterDelta> &local, size_t max_bytes,
                                  uint64_t *refused) {
    std::vector<std::string> out;
    std::string line;
    for (const ClusterDelta &d : local) {
        if (!field_ok(d.rule, kMaxRuleBytes) || !field_ok(d.key, kMaxKeyBytes) || d.packets == 0 ||
            d.packets > kMaxDeltaPackets) {
            ++*refused;
            continue;
        }
        line.assign(d.rule).append("\t").append(d.key).append("\t");
        line.append(std::to_string(d.packets)).append("\n");
        if (out.empty() || out.back().size() + line.size() > max_bytes) out.emplace_back();
        out.back() += line;
    }
    return out;
}

// Well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing past U+10FFFF): a
// rule and a key travel on to the dataplane in JSON, which takes nothing else, and one bad byte
// there would fail the whole sync request rather than its line.
bool is_utf8(std::string_view s) {
    size_t i = 0;
    while (i < s.size()) {
        const auto c = static_cast<unsigned char>(s[i]);
        size_t more = 0;
        unsigned char lo = 0x80, hi = 0xBF;  // the range of the byte after the first
        if (c < 0x80) {
            ++i;
            continue;
        } else if (c >= 0xC2 && c <= 0xDF) {
            more = 1;
        } else if (c >= 0xE0 && c <= 0xEF) {
            more = 2;
            if (c == 0xE0) lo = 0xA0;  // overlong
            if (c == 0xED) hi = 0x9F;  // surrogates
        } else if (c >= 0xF0 && c <= 0xF4) {
            more = 3;
            if (c == 0xF0) lo = 0x90;  // overlong
            if (c == 0xF4) hi = 0x8F;  // past U+10FFFF
        } else {
            return false;
        }
        if (s.size() - i - 1 < more) return false;
        for (size_t k = 1; k <= more; ++k) {
            const auto b = static_cast<unsigned char>(s[i + k]);
            if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) return false;
        }
        i += more + 1;
    }
    return true;
}

bool parse_line(std::string_view line, std::vector<ClusterDelta> *out) {
    const size_t tab1 = line.find('\t');
    if (tab1 == std::string_view::npos) return false;
    const size_t tab2 = line.find('\t', tab1 + 1);
    if (tab2 == std::string_view::npos || line.find('\t', tab2 + 1) != std::string_view::npos)
        return false;
    const std::string_view rule = line.substr(0, tab1);
    const std::string_view key = line.substr(tab1 + 1, tab2 - tab1 - 1);
    const std::string_view packets = line.substr(tab2 + 1);
    if (rule.empty() || rule.size() > kMaxRuleBytes || key.empty() || key.size() > kMaxKeyBytes ||
        !is_utf8(rule) || !is_utf8(key))
        return false;
    // 2^40 has 13 digits; the length check keeps a long run of digits out of the message.
    std::string why;
    const auto n =
        packets.size() > 20 ? std::nullopt : parse_uint(packets, 1, kMaxDeltaPackets, &why);
    if (!n) return false;
    out->push_back({std::string(rule), std::string(key), *n});
    return true;
}

// "<ms>-<seq>", as XADD makes them.
bool is_stream_id(std::string_view id) {
    const size_t dash = id.find('-');
    auto digits = [](std::string_view s) {
        return !s.empty() && s.size() <= 20 &&
               std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
    };
    return dash != std::string_view::npos && digits(id.substr(0, dash)) &&
           digits(id.substr(dash + 1));
}

// A stream ID's two numbers, for ordering (is_stream_id holds).
std::pair<uint64_t, uint64_t> stream_position(std::string_view id) {
    const size_t dash = id.find('-');
    return {std::stoull(std::string(id.substr(0, dash))),
            std::stoull(std::string(id.substr(dash + 1)))};
}

uint64_t wall_clock_ms() {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                     std::chrono::system_clock::now().time_since_epoch())
                                     .count());
}

bool is_sha1(std::string_view s) {
    return s.size() == 40 && std::all_of(s.begin(), s.end(), [](char c) {
               return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
           });
}

bool is(const ReplyPtr &v, int type) {
    return v != nullptr && v->type == type;
}

// A message from the store, for a log line: at most 200 bytes.
std::string clipped(const std::string &s) {
    return s.size() <= 200 ? s : s.substr(0, 200) + "...";
}

// Where a sync's reading stands: the cursor, the history not to charge, the entries' checks.
struct Reading {
    const std::string &box;
    std::string *cursor;
    std::string *history_until;
    EntryVerifier *verifier;  // nullptr: entries unsigned, all believed
};

// The script's answer read into *r; false (with r->error) when it is an error or malformed.
bool read_answer(const Reply &a, const Reading &at, ClusterSyncResult *r) {
    if (a.type == REDIS_REPLY_ERROR) {
        if (a.str.starts_with(kBadKey)) {
            ++r->refused;  // bad data in the store: someone else's key
            r->error = "refused: " + clipped(a.str.substr(kBadKey.size()));
        } else {
            r->error = "the store answered: " + clipped(a.str);
        }
        return false;
    }
    auto malformed = [&](const char *why) {
        ++r->refused;
        r->error = std::string("malformed reply: ") + why;
        return false;
    };
    constexpr size_t kHead = 4, kPerEntry = 7;
    const auto &e = a.elements;
    if (a.type != REDIS_REPLY_ARRAY || e.size() < kHead || (e.size() - kHead) % kPerEntry != 0)
        return malformed("not an array of 4 + 7n values");
    if (!is(e[0], REDIS_REPLY_STRING) || !is_stream_id(e[0]->str))
        return malformed("the cursor is not a stream ID");
    if (!is(e[1], REDIS_REPLY_INTEGER) || e[1]->integer < 1 || e[1]->integer > UINT32_MAX)
        return malformed("the live boxes are not a count from 1");
    if (!is(e[2], REDIS_REPLY_INTEGER) || e[2]->integer < 0 || e[2]->integer > kMaxEntries)
        return malformed("the skipped entries are not a count up to the entries read");
    if (!is(e[3], REDIS_REPLY_STRING) || !is_stream_id(e[3]->str))
        return malformed("where this box joined is not a stream ID");
    for (size_t i = kHead; i < e.size(); ++i)
        if (!is(e[i], REDIS_REPLY_STRING)) return malformed("an entry is not seven strings");
    for (size_t i = kHead; i < e.size(); i += kPerEntry)
        if (!is_stream_id(e[i]->str)) return malformed("an entry's ID is not a stream ID");

    if (at.cursor->empty()) *at.history_until = e[3]->str;
    const auto history_end = at.history_until->empty() ? std::pair<uint64_t, uint64_t>{0, 0}
                                                       : stream_position(*at.history_until);
    const uint64_t now_ms = wall_clock_ms();
    r->refused += static_cast<uint64_t>(e[2]->integer);
    for (size_t i = kHead; i < e.size(); i += kPerEntry) {
        // From before this box joined: believed entries only tell who is live, nothing counted.
        const bool history = stream_position(e[i]->str) <= history_end;
        const std::string &from = e[i + 1]->str, &payload = e[i + 6]->str;
        const EntrySignature signature{e[i + 2]->str, e[i + 3]->str, e[i + 4]->str, e[i + 5]->str};
        // The script skips these; a store that sends them anyway is not believed.
        if (from.empty() || from.size() > kMaxBoxBytes || from == at.box ||
            from.size() + payload.size() > kMaxEntryBytes) {
            if (!history) ++r->refused;
            continue;
        }
        if (at.verifier != nullptr) {
            if (const std::optional<EntryRefusal> why =
                    at.verifier->check(from, signature, payload, now_ms)) {
                if (!history) {
                    ++r->refused;
                    ++r->signature_refused[static_cast<size_t>(*why)];
                }
                continue;
            }
        }
        if (history) continue;
        const size_t first = r->remote.size();
        r->refused += parse_cluster_payload(payload, &r->remote);
        for (size_t d = first; d < r->remote.size(); ++d) r->remote[d].box = from;
    }
    *at.cursor = e[0]->str;
    if (!at.history_until->empty() && stream_position(*at.cursor) >= history_end)
        at.history_until->clear();
    r->live_boxes = at.verifier != nullptr ? 1 + at.verifier->live_others(now_ms)
                                           : static_cast<uint32_t>(e[1]->integer);
    return true;
}

}  // namespace

uint64_t parse_cluster_payload(std::string_view payload, std::vector<ClusterDelta> *out) {
    uint64_t refused = 0;
    while (!payload.empty()) {
        const size_t end = payload.find('\n');
        if (end == std::string_view::npos) return refused + 1;  // a last line without its newline
        if (!parse_line(payload.substr(0, end), out)) ++refused;
        payload.remove_prefix(end + 1);
    }
    return refused;
}

ClusterStore::ClusterStore(ClusterStoreOptions o) : o_(std::move(o)) {
    log_key_ = "fg:{" + o_.cluster + "}:log";
    boxes_key_ = "fg:{" + o_.cluster + "}:boxes";
    std::string why;
    if (o_.cluster.empty() || o_.cluster.size() > kMaxClusterBytes) {
        invalid_ = "the cluster name must be 1-" + std::to_string(kMaxClusterBytes) + " bytes";
    } else if (o_.box.empty() || o_.box.size() > kMaxBoxBytes) {
        invalid_ = "the box id must be 1-" + std::to_string(kMaxBoxBytes) + " bytes";
    } else if (o_.box_timeout_ms < 1 || o_.box_timeout_ms > kMaxBoxTimeoutMs) {
        invalid_ = "the box timeout must be 1 ms to a day";
    } else if (o_.timeout_ms < 1) {
        invalid_ = "the timeout must be at least 1 ms";
    } else if (const std::optional<RedisAddress> a = parse_redis_address(o_.address, &why)) {
        host_ = a->host;
        port_ = a->port;
    } else {
        invalid_ = "the store's address '" + o_.address + "' " + why;
    }
    if (o_.auth.keys.on()) {
        const auto us = std::chrono::duration_cast<std::chrono::microseconds>(
            std::chrono::system_clock::now().time_since_epoch());
        signer_.emplace(o_.cluster, o_.box, o_.auth.keys.keys.front(),
                        static_cast<uint64_t>(us.count()));
        verifier_.emplace(o_.cluster, o_.auth.keys, o_.box_timeout_ms);
    }
    if (invalid_.empty() && o_.auth.tls.on()) {
        // A Unix socket is this host's, guarded by its file mode; Redis speaks TLS on TCP only.
        if (port_ == 0)
            invalid_ = "TLS needs a host:port address, not a Unix socket";
        else if (!(tls_ = StoreTlsContext::make(o_.auth.tls, host_, &why)))
            invalid_ = why;
    }
}

ClusterStore::~ClusterStore() {
    drop();
}

void ClusterStore::drop() {
    link_.reset();
}

bool ClusterStore::connect(std::string *error) {
    LinkFailure failure = LinkFailure::none;
    std::string why;
    link_ = StoreLink::open(host_, port_, tls_.get(), o_.timeout_ms, &failure, &why);
    if (link_ == nullptr) {
        if (failure == LinkFailure::tls) ++totals_.tls_refused;  // the link is gone: counted here
        *error =
            (failure == LinkFailure::tls ? "" : "cannot connect to ") + o_.address + ": " + why;
        return false;
    }
    logged_in_ = o_.auth.password.empty();
    return true;
}

bool ClusterStore::exchange(const std::vector<std::string> &pushes, ClusterSyncResult *r) {
    if (!invalid_.empty()) {
        r->error = invalid_;
        return false;
    }
    if (link_ != nullptr && !link_->idle_and_open()) drop();
    if (link_ == nullptr && !connect(&r->error)) return false;

    const uint64_t retention_ms = std::clamp(o_.box_timeout_ms, kMinRetentionMs, kMaxRetentionMs);
    const std::string box_timeout = std::to_string(o_.box_timeout_ms),
                      entries = std::to_string(kMaxEntries),
                      entry_bytes = std::to_string(kMaxEntryBytes),
                      retention = std::to_string(retention_ms),
                      payload_bytes = std::to_string(kMaxReplyPayloadBytes);
    std::vector<std::string_view> args = {"EVALSHA",
                                          sha_,
                                          "2",
                                          log_key_,
                                          boxes_key_,
                                          o_.box,
                                          cursor_,
                                          box_timeout,
                                          entries,
                                          entry_bytes,
                                          retention,
                                          payload_bytes,
                                          verifier_ ? "1" : "0"};
    args.insert(args.end(), pushes.begin(), pushes.end());

    std::string commands;
    std::vector<ReplyPtr> replies;
    // A new connection logs in first, in the same round trip: AUTH's answer is read before any
    // other (Redis runs a connection's commands in order, and refuses them all unauthenticated).
    auto run = [&](size_t n) {
        const bool login = !logged_in_;
        replies.clear();
        if (!round_trip(*link_, commands, n + (login ? 1 : 0), o_.timeout_ms, &replies,
                        &totals_.bytes, &r->error))
            return false;
        if (login) {
            if (!is(replies[0], REDIS_REPLY_STATUS)) {
                ++totals_.auth_refused;
                r->error = "the store refused the login as " +
                           (o_.auth.user.empty() ? std::string("the default user") : o_.auth.user) +
                           ": " +
                           (is(replies[0], REDIS_REPLY_ERROR) ? clipped(replies[0]->str)
                                                              : std::string("no answer"));
                return false;
            }
            replies.erase(replies.begin());
            logged_in_ = true;
        }
        return true;
    };
    if (!logged_in_) {
        if (o_.auth.user.empty())
            append_command(&commands, {"AUTH", o_.auth.password});
        else
            append_command(&commands, {"AUTH", o_.auth.user, o_.auth.password});
    }
    if (sha_.empty()) {
        // This store's first sync: load the script, which Redis answers with its SHA-1
        // (hiredis has no SHA-1 of its own), and run it, in the one round trip.
        append_command(&commands, {"SCRIPT", "LOAD", kScript});
        args[0] = "EVAL";
        args[1] = kScript;
        append_command(&commands, args);
        if (!run(2)) return false;
        if (is(replies[0], REDIS_REPLY_STRING) && is_sha1(replies[0]->str)) sha_ = replies[0]->str;
    } else {
        append_command(&commands, args);
        if (!run(1)) return false;
        // The script cache is empty after a restart or SCRIPT FLUSH: EVAL caches it again.
        if (is(replies[0], REDIS_REPLY_ERROR) && replies[0]->str.starts_with("NOSCRIPT")) {
            args[0] = "EVAL";
            args[1] = kScript;
            commands.clear();
            append_command(&commands, args);
            if (!run(1)) return false;  // logged in by now: no AUTH in this one
        }
    }
    return read_answer(*replies.back(),
                       {o_.box, &cursor_, &history_until_, verifier_ ? &*verifier_ : nullptr}, r);
}

void ClusterStore::set_keys(const ClusterKeys &keys) {
    if (!signer_ || !keys.on()) return;
    o_.auth.keys = keys;
    signer_->set_key(keys.keys.front());
    verifier_->set_keys(keys);
}

ClusterSyncResult ClusterStore::sync(const std::vector<ClusterDelta> &local) {
    ClusterSyncResult r;
    try {
        std::vector<std::string> lines =
            payloads(local, kMaxEntryBytes - o_.box.size(), &r.refused);
        // Signed, every sync writes an entry: an empty one is the box's heartbeat.
        if (signer_ && lines.empty()) lines.emplace_back();
        std::vector<std::string> pushes;
        const uint64_t now_ms = wall_clock_ms();
        for (std::string &payload : lines) {
            EntrySignature sig = signer_ ? signer_->sign(payload, now_ms) : EntrySignature{};
            for (std::string *f : {&sig.seq, &sig.time_ms, &sig.key_id, &sig.mac})
                pushes.push_back(std::move(*f));
            pushes.push_back(std::move(payload));
        }
        r.ok = exchange(pushes, &r);
    } catch (const std::exception &e) {  // std::bad_alloc: the one a sync can meet
        r.ok = false;
        r.error = e.what();
    }
    if (!r.ok) {
        if (link_ != nullptr && link_->tls_refused()) ++totals_.tls_refused;
        // A deadline passed: connecting, the handshake or the round trip (store_link.cpp's and
        // round_trip's "timed out").
        if (r.error.find("timed out") != std::string::npos) ++totals_.timeouts;
        drop();
        r.remote.clear();
        r.live_boxes = 0;
    }
    ++(r.ok ? totals_.ok : totals_.failed);
    totals_.refused += r.refused;
    for (size_t i = 0; i < kEntryRefusals; ++i)
        totals_.entries_refused[i] += r.signature_refused[i];
    return r;
}

}  // namespace floodgate
