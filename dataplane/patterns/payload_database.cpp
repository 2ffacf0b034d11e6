#include "dataplane/patterns/payload_database.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#if FG_HAVE_HYPERSCAN
#include <hs/hs.h>
#endif

namespace floodgate {

std::string payload_fingerprint(const std::vector<PayloadPattern> &patterns) {
    uint64_t h = 0xcbf29ce484222325ull;
    const auto add = [&h](const std::string &bytes) {
        for (unsigned char c : bytes) h = (h ^ c) * 0x100000001b3ull;
        for (int i = 0; i < 8; ++i) h = (h ^ (bytes.size() >> (8 * i) & 0xff)) * 0x100000001b3ull;
    };
    add(payload_engine_version());
    for (const PayloadPattern &p : patterns) {
        add(std::string(1, static_cast<char>(p.kind)) + (p.caseless ? "c" : "s"));
        add(p.text);
    }
    char out[17];
    std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
    return out;
}

bool dns_labels(const std::string &domain, std::string *labels, std::string *why) {
    labels->clear();
    std::string name = domain;
    if (!name.empty() && name.back() == '.') name.pop_back();  // "victim.example." too
    if (name.empty() || name.size() > 253) {
        *why = "a domain of 1-253 characters";
        return false;
    }
    size_t at = 0;
    while (at <= name.size()) {
        const size_t dot = std::min(name.find('.', at), name.size());
        const std::string label = name.substr(at, dot - at);
        if (label.empty() || label.size() > 63) {
            *why = "label '" + label + "' must be 1-63 characters";
            return false;
        }
        for (char c : label)
            if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '-' || c == '_')) {
                *why = "label '" + label + "' may use only A-Z a-z 0-9 - _";
                return false;
            }
        labels->push_back(static_cast<char>(label.size()));
        *labels += label;
        at = dot + 1;
    }
    labels->push_back('\0');  // the root: the name ends here
    return true;
}

#if FG_HAVE_HYPERSCAN

namespace {

// Bytes as an expression that matches exactly them.
std::string escaped(const std::string &bytes) {
    std::string out;
    char buf[5];
    for (unsigned char c : bytes) {
        std::snprintf(buf, sizeof buf, "\\x%02x", c);
        out += buf;
    }
    return out;
}

}  // namespace

bool payload_engine_available() {
    return true;
}

std::string payload_engine_version() {
    return std::string("Hyperscan ") + hs_version();
}

std::shared_ptr<const PayloadDatabase> PayloadDatabase::compile(
    const std::vector<PayloadPattern> &patterns, std::string *error, int *bad_pattern) {
    *bad_pattern = -1;
    if (patterns.empty() || patterns.size() > kMaxPayloadPatterns) {
        *error = "1-" + std::to_string(kMaxPayloadPatterns) + " patterns";
        return nullptr;
    }
    std::vector<std::string> expressions, bytes_of;
    std::vector<unsigned> flags, ids;
    bool literals_only = true;
    for (size_t i = 0; i < patterns.size(); ++i) {
        const PayloadPattern &p = patterns[i];
        std::string e;
        if (p.kind == PayloadPattern::Kind::regex) {
            e = p.text;
            literals_only = false;
            bytes_of.emplace_back();
        } else if (p.kind == PayloadPattern::Kind::literal) {
            e = escaped(p.text);
            bytes_of.push_back(p.text);
        } else {
            std::string labels, why;
            if (!dns_labels(p.text, &labels, &why)) {
                *bad_pattern = static_cast<int>(i);
                *error = why;
                return nullptr;
            }
            e = escaped(labels);
            bytes_of.push_back(labels);
        }
        if (p.text.size() > kMaxPayloadPatternBytes) {
            *bad_pattern = static_cast<int>(i);
            *error = "longer than " + std::to_string(kMaxPayloadPatternBytes) + " bytes";
            return nullptr;
        }
        expressions.push_back(std::move(e));
        flags.push_back(
            HS_FLAG_SINGLEMATCH | HS_FLAG_DOTALL |
            (p.caseless || p.kind == PayloadPattern::Kind::dns_suffix ? HS_FLAG_CASELESS : 0u));
        ids.push_back(static_cast<unsigned>(i));
    }
    std::vector<const char *> cstrs;
    for (const std::string &e : expressions) cstrs.push_back(e.c_str());
    hs_database_t *db = nullptr;
    hs_compile_error_t *err = nullptr;
    // Block mode, for the CPU this runs on (the control plane and the dataplane are one box).
    // Literals only: Hyperscan's literal API, whose matches cost less to report (measured in
    // perf/bench_payload's match regime).
    hs_error_t rc;
    if (literals_only) {
        std::vector<const char *> lits;
        std::vector<size_t> lens;
        std::vector<unsigned> lit_flags;
        for (size_t i = 0; i < bytes_of.size(); ++i) {
            lits.push_back(bytes_of[i].data());
            lens.push_back(bytes_of[i].size());
            lit_flags.push_back(flags[i] & ~static_cast<unsigned>(HS_FLAG_DOTALL));
        }
        rc = hs_compile_lit_multi(lits.data(), lit_flags.data(), ids.data(), lens.data(),
                                  static_cast<unsigned>(lits.size()), HS_MODE_BLOCK, nullptr, &db,
                                  &err);
    } else {
        rc = hs_compile_multi(cstrs.data(), flags.data(), ids.data(),
                              static_cast<unsigned>(cstrs.size()), HS_MODE_BLOCK, nullptr, &db,
                              &err);
    }
    if (rc != HS_SUCCESS) {
        *error = err != nullptr && err->message != nullptr ? err->message : "compile failed";
        if (error->find("empty buffer") != std::string::npos)  // its hint is not the operator's
            *error =
                "it can match an empty payload, so it would match every packet "
                "(Hyperscan: " +
                *error + ")";
        *bad_pattern = err != nullptr ? err->expression : -1;
        hs_free_compile_error(err);
        return nullptr;
    }
    size_t bytes = 0;
    if (hs_database_size(db, &bytes) != HS_SUCCESS || bytes > kMaxPayloadDatabaseBytes) {
        hs_free_database(db);
        *error = "the compiled patterns take " + std::to_string(bytes) + " bytes, over " +
                 std::to_string(kMaxPayloadDatabaseBytes);
        return nullptr;
    }
    std::shared_ptr<PayloadDatabase> out(new PayloadDatabase());
    out->db_ = db;
    out->bytes_ = bytes;
    return out;
}

PayloadDatabase::~PayloadDatabase() {
    hs_free_database(db_);
}

std::string PayloadDatabase::serialize() const {
    char *bytes = nullptr;
    size_t len = 0;
    if (hs_serialize_database(db_, &bytes, &len) != HS_SUCCESS) return "";
    std::string out(bytes, len);
    std::free(bytes);  // Hyperscan's misc allocator: malloc by default
    return out;
}

std::shared_ptr<const PayloadDatabase> PayloadDatabase::deserialize(const std::string &bytes,
                                                                    std::string *error) {
    hs_database_t *db = nullptr;
    if (bytes.size() > kMaxPayloadDatabaseBytes ||
        hs_deserialize_database(bytes.data(), bytes.size(), &db) != HS_SUCCESS) {
        *error = "not a database this Hyperscan can load";
        return nullptr;
    }
    size_t size = 0;
    hs_database_size(db, &size);
    std::shared_ptr<PayloadDatabase> out(new PayloadDatabase());
    out->db_ = db;
    out->bytes_ = size;
    return out;
}

std::unique_ptr<PayloadScratch> PayloadScratch::create(
    const std::vector<const PayloadDatabase *> &databases, unsigned cores, std::string *error) {
    std::unique_ptr<PayloadScratch> s(new PayloadScratch());
    if (databases.empty()) return s;
    hs_scratch_t *proto = nullptr;
    for (const PayloadDatabase *d : databases)
        if (hs_alloc_scratch(d->database(), &proto) != HS_SUCCESS) {
            hs_free_scratch(proto);
            *error = "cannot allocate Hyperscan scratch space";
            return nullptr;
        }
    s->per_core_.push_back(proto);
    for (unsigned i = 1; i < cores; ++i) {
        hs_scratch_t *clone = nullptr;
        if (hs_clone_scratch(proto, &clone) != HS_SUCCESS) {
            *error = "cannot clone Hyperscan scratch space";
            return nullptr;
        }
        s->per_core_.push_back(clone);
    }
    return s;
}

PayloadScratch::~PayloadScratch() {
    for (hs_scratch_t *s : per_core_) hs_free_scratch(s);
}

#else

bool payload_engine_available() {
    return false;
}

std::string payload_engine_version() {
    return "none";
}

std::shared_ptr<const PayloadDatabase> PayloadDatabase::compile(const std::vector<PayloadPattern> &,
                                                                std::string *error,
                                                                int *bad_pattern) {
    *bad_pattern = -1;
    *error =
        "this floodgate was built without Hyperscan or Vectorscan: payload rules are not "
        "available (install libhyperscan-dev and rebuild)";
    return nullptr;
}

PayloadDatabase::~PayloadDatabase() = default;

std::string PayloadDatabase::serialize() const {
    return "";
}

std::shared_ptr<const PayloadDatabase> PayloadDatabase::deserialize(const std::string &,
                                                                    std::string *error) {
    *error = "built without Hyperscan";
    return nullptr;
}

std::unique_ptr<PayloadScratch> PayloadScratch::create(const std::vector<const PayloadDatabase *> &,
                                                       unsigned, std::string *) {
    return std::unique_ptr<PayloadScratch>(new PayloadScratch());
}

PayloadScratch::~PayloadScratch() = default;

#endif

}  // namespace floodgate
