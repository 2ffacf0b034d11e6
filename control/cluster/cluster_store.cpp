#include "control/cluster/cluster_store.h"

#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
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

using Clock = std::chrono::steady_clock;

// The sync script, cluster_store.lua, built in. KEYS: log, boxes. ARGV: box, cursor,
// box_timeout_ms, max_entries, max_entry_bytes, retention_ms, max_reply_payload_bytes, then the
// payloads to append (none, one or more). Returns {cursor, live, skipped, box, payload, box,
// payload, ...}: the last ID read (or the cursor given when none was), the live boxes, the
// entries skipped as bad data, and the other boxes' entries in stream order. A key holding
// another type is an error reply "FGBADKEY ...", and is left as it is.
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

// ---- The connection's I/O: our own, non-blocking, each wait bounded by the deadline ----
// (hiredis 0.14's blocking calls bound each read, not the reply, and write() can raise
// SIGPIPE.)

bool wait_for(int fd, short events, Clock::time_point deadline, std::string *error) {
    for (;;) {
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
        if (left.count() <= 0) {
            *error = "timed out";
            return false;
        }
        pollfd p{fd, events, 0};
        const int rc = ::poll(&p, 1, static_cast<int>(left.count()));
        if (rc > 0) return true;  // ready, or an error that the send or recv reports
        if (rc < 0 && errno != EINTR) {
            *error = std::string("poll: ") + std::strerror(errno);
            return false;
        }
    }
}

bool send_all(int fd, std::string_view data, Clock::time_point deadline, std::string *error) {
    while (!data.empty()) {
        const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
        if (n > 0) {
            data.remove_prefix(static_cast<size_t>(n));
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
            *error = std::string("send: ") + std::strerror(errno);
            return false;
        }
        if (!wait_for(fd, POLLOUT, deadline, error)) return false;
    }
    return true;
}

// Sends `commands` (n of them, pipelined) and reads their n replies, all by the deadline and
// within kMaxReplyBytes received; *bytes counts what was received.
bool round_trip(int fd, const std::string &commands, size_t n, int timeout_ms,
                std::vector<ReplyPtr> *replies, uint64_t *bytes, std::string *error) {
    const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    if (!send_all(fd, commands, deadline, error)) return false;
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
        if (!wait_for(fd, POLLIN, deadline, error)) return false;
        const ssize_t got = ::recv(fd, buf, sizeof buf, 0);
        if (got == 0) {
            *error = "the store closed the connection";
            return false;
        }
        if (got < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) continue;
            *error = std::string("recv: ") + std::strerror(errno);
            return false;
        }
        *bytes += static_cast<uint64_t>(got);
        received += static_cast<size_t>(got);
        if (received > kMaxReplyBytes) {
            *error = "reply too large";
            return false;
        }
        if (redisReaderFeed(reader.get(), buf, static_cast<size_t>(got)) != REDIS_OK) {
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

// An idle connection that is readable was closed by the store (its `timeout`) or holds data
// nobody asked for: it cannot carry a sync.
bool idle_and_open(int fd) {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, 0) == 0;
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

// The script's answer read into *r; false (with r->error) when it is an error or malformed.
bool read_answer(const Reply &a, const std::string &box, std::string *cursor,
                 ClusterSyncResult *r) {
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
    const auto &e = a.elements;
    if (a.type != REDIS_REPLY_ARRAY || e.size() < 3 || (e.size() - 3) % 2 != 0)
        return malformed("not an array of 3 + 2n values");
    if (!is(e[0], REDIS_REPLY_STRING) || !is_stream_id(e[0]->str))
        return malformed("the cursor is not a stream ID");
    if (!is(e[1], REDIS_REPLY_INTEGER) || e[1]->integer < 1 || e[1]->integer > UINT32_MAX)
        return malformed("the live boxes are not a count from 1");
    if (!is(e[2], REDIS_REPLY_INTEGER) || e[2]->integer < 0 || e[2]->integer > kMaxEntries)
        return malformed("the skipped entries are not a count up to the entries read");
    for (size_t i = 3; i < e.size(); ++i)
        if (!is(e[i], REDIS_REPLY_STRING)) return malformed("an entry is not two strings");

    r->refused += static_cast<uint64_t>(e[2]->integer);
    for (size_t i = 3; i < e.size(); i += 2) {
        const std::string &from = e[i]->str, &payload = e[i + 1]->str;
        // The script skips these; a store that sends them anyway is not believed.
        if (from.empty() || from.size() > kMaxBoxBytes || from == box ||
            from.size() + payload.size() > kMaxEntryBytes) {
            ++r->refused;
            continue;
        }
        r->refused += parse_cluster_payload(payload, &r->remote);
    }
    *cursor = e[0]->str;
    r->live_boxes = static_cast<uint32_t>(e[1]->integer);
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
}

ClusterStore::~ClusterStore() {
    drop();
}

void ClusterStore::drop() {
    if (redis_ != nullptr) redisFree(redis_);
    redis_ = nullptr;
}

bool ClusterStore::connect(std::string *error) {
    const timeval tv{o_.timeout_ms / 1000, (o_.timeout_ms % 1000) * 1000};
    redisContext *c = port_ == 0 ? redisConnectUnixWithTimeout(host_.c_str(), tv)
                                 : redisConnectWithTimeout(host_.c_str(), port_, tv);
    if (c == nullptr || c->err != 0) {
        *error = "cannot connect to " + o_.address + ": " + (c ? c->errstr : "out of memory");
        if (c != nullptr) redisFree(c);
        return false;
    }
    const int flags = ::fcntl(c->fd, F_GETFL);
    if (flags < 0 || ::fcntl(c->fd, F_SETFL, flags | O_NONBLOCK) < 0) {
        *error = std::string("fcntl: ") + std::strerror(errno);
        redisFree(c);
        return false;
    }
    redis_ = c;
    return true;
}

bool ClusterStore::exchange(const std::vector<std::string> &pushes, ClusterSyncResult *r) {
    if (!invalid_.empty()) {
        r->error = invalid_;
        return false;
    }
    if (redis_ != nullptr && !idle_and_open(redis_->fd)) drop();
    if (redis_ == nullptr && !connect(&r->error)) return false;

    const uint64_t retention_ms = std::clamp(o_.box_timeout_ms, kMinRetentionMs, kMaxRetentionMs);
    const std::string box_timeout = std::to_string(o_.box_timeout_ms),
                      entries = std::to_string(kMaxEntries),
                      entry_bytes = std::to_string(kMaxEntryBytes),
                      retention = std::to_string(retention_ms),
                      payload_bytes = std::to_string(kMaxReplyPayloadBytes);
    std::vector<std::string_view> args = {"EVALSHA",  sha_,        "2",       log_key_,
                                          boxes_key_, o_.box,      cursor_,   box_timeout,
                                          entries,    entry_bytes, retention, payload_bytes};
    args.insert(args.end(), pushes.begin(), pushes.end());

    std::string commands;
    std::vector<ReplyPtr> replies;
    auto run = [&](size_t n) {
        replies.clear();
        return round_trip(redis_->fd, commands, n, o_.timeout_ms, &replies, &totals_.bytes,
                          &r->error);
    };
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
            if (!run(1)) return false;
        }
    }
    return read_answer(*replies.back(), o_.box, &cursor_, r);
}

ClusterSyncResult ClusterStore::sync(const std::vector<ClusterDelta> &local) {
    ClusterSyncResult r;
    try {
        const std::vector<std::string> pushes =
            payloads(local, kMaxEntryBytes - o_.box.size(), &r.refused);
        r.ok = exchange(pushes, &r);
    } catch (const std::exception &e) {  // std::bad_alloc: the one a sync can meet
        r.ok = false;
        r.error = e.what();
    }
    if (!r.ok) {
        drop();
        r.remote.clear();
        r.live_boxes = 0;
    }
    ++(r.ok ? totals_.ok : totals_.failed);
    totals_.refused += r.refused;
    return r;
}

}  // namespace floodgate
