#include "control/cluster/entry_signing.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <utility>

#include "dataplane/api/numbers.h"

namespace floodgate {

namespace {

// The MAC's input: each variable field with its length in front, so that no two different
// entries give the same bytes (a box id ending where a cluster name would have gone on).
void put_u64(std::string *out, uint64_t v) {
    for (int shift = 56; shift >= 0; shift -= 8) out->push_back(static_cast<char>(v >> shift));
}

void put_field(std::string *out, std::string_view f) {
    put_u64(out, f.size());
    out->append(f);
}

bool key_id_ok(std::string_view id) {
    return !id.empty() && id.size() <= kMaxKeyIdBytes &&
           std::all_of(id.begin(), id.end(), [](char c) {
               return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '_' || c == '.' || c == '-';
           });
}

std::optional<uint64_t> decimal(std::string_view s) {
    std::string why;
    return s.size() > 20 ? std::nullopt : parse_uint(s, 0, UINT64_MAX, &why);
}

}  // namespace

std::optional<ClusterKeys> parse_cluster_keys(std::string_view text, std::string *why) {
    ClusterKeys k;
    while (!text.empty()) {
        const size_t end = std::min(text.find('\n'), text.size());
        std::string_view line = text.substr(0, end);
        text.remove_prefix(std::min(end + 1, text.size()));
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line.empty()) continue;
        const size_t space = line.find(' ');
        const std::string_view id = line.substr(0, space), secret = space == std::string_view::npos
                                                                        ? std::string_view()
                                                                        : line.substr(space + 1);
        if (!key_id_ok(id) || secret.size() < kMinClusterSecretBytes ||
            secret.find_first_of(" \t") != std::string_view::npos) {
            *why = "each line must be 'id secret': an id of 1-" + std::to_string(kMaxKeyIdBytes) +
                   " letters, digits, '_', '.' or '-', and a secret of at least " +
                   std::to_string(kMinClusterSecretBytes) + " bytes without spaces";
            return std::nullopt;
        }
        for (const ClusterKey &other : k.keys)
            if (other.id == id) {
                *why = "the key id '" + std::string(id) + "' is there twice";
                return std::nullopt;
            }
        k.keys.push_back({std::string(id), std::string(secret)});
    }
    if (k.keys.empty() || k.keys.size() > 2) {
        *why = "it must hold one or two keys, one a line";
        return std::nullopt;
    }
    return k;
}

std::string entry_mac(const ClusterKey &key, std::string_view cluster, std::string_view box,
                      uint64_t seq, uint64_t time_ms, std::string_view payload) {
    std::string input = "floodgate cluster entry v1";
    put_field(&input, cluster);
    put_field(&input, box);
    put_u64(&input, seq);
    put_u64(&input, time_ms);
    put_field(&input, key.id);
    put_field(&input, payload);
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    HMAC(EVP_sha256(), key.secret.data(), static_cast<int>(key.secret.size()),
         reinterpret_cast<const unsigned char *>(input.data()), input.size(), mac, &len);
    static constexpr char kHex[] = "0123456789abcdef";
    std::string hex;
    for (unsigned int i = 0; i < len; ++i) {
        hex.push_back(kHex[mac[i] >> 4]);
        hex.push_back(kHex[mac[i] & 15]);
    }
    return hex;
}

EntrySigner::EntrySigner(std::string cluster, std::string box, ClusterKey key, uint64_t first_seq)
    : cluster_(std::move(cluster)),
      box_(std::move(box)),
      key_(std::move(key)),
      next_seq_(first_seq) {}

EntrySignature EntrySigner::sign(std::string_view payload, uint64_t now_ms) {
    const uint64_t seq = next_seq_++;
    return {std::to_string(seq), std::to_string(now_ms), key_.id,
            entry_mac(key_, cluster_, box_, seq, now_ms, payload)};
}

EntryVerifier::EntryVerifier(std::string cluster, ClusterKeys keys, uint64_t window_ms)
    : cluster_(std::move(cluster)), keys_(std::move(keys)), window_ms_(window_ms) {}

std::optional<EntryRefusal> EntryVerifier::check(std::string_view box, const EntrySignature &s,
                                                 std::string_view payload, uint64_t now_ms) {
    if (s.seq.empty() && s.time_ms.empty() && s.key_id.empty() && s.mac.empty())
        return EntryRefusal::unsigned_entry;
    const auto key = std::find_if(keys_.keys.begin(), keys_.keys.end(),
                                  [&](const ClusterKey &k) { return k.id == s.key_id; });
    if (key == keys_.keys.end()) return EntryRefusal::unknown_key;
    const std::optional<uint64_t> seq = decimal(s.seq), time_ms = decimal(s.time_ms);
    if (!seq || !time_ms || s.mac.size() != kMacHexBytes) return EntryRefusal::bad_mac;
    const std::string want = entry_mac(*key, cluster_, box, *seq, *time_ms, payload);
    if (CRYPTO_memcmp(want.data(), s.mac.data(), kMacHexBytes) != 0) return EntryRefusal::bad_mac;
    // Only a genuine entry gets this far: its time and number are the box's own.
    if (*time_ms + window_ms_ < now_ms) return EntryRefusal::too_old;
    if (*time_ms > now_ms + window_ms_) return EntryRefusal::future;
    auto at = heard_.find(std::string(box));
    if (at == heard_.end()) {
        if (heard_.size() >= kMaxHeardBoxes) return EntryRefusal::too_many_boxes;
        at = heard_.emplace(std::string(box), Heard{}).first;
    }
    Heard &h = at->second;
    if (*seq <= h.seq) return EntryRefusal::replayed;
    h.seq = *seq;
    h.time_ms = std::max(h.time_ms, *time_ms);
    return std::nullopt;
}

uint32_t EntryVerifier::live_others(uint64_t now_ms) {
    std::erase_if(heard_, [&](const auto &b) { return b.second.time_ms + window_ms_ < now_ms; });
    return static_cast<uint32_t>(heard_.size());
}

}  // namespace floodgate
