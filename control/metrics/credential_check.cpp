// Basic auth with its cost bounded (control/metrics/credential_check.h).
#include "control/metrics/credential_check.h"

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>

#include <algorithm>

#include "control/metrics/web_auth.h"

namespace floodgate {

CredentialCheck::CredentialCheck(std::vector<std::pair<std::string, std::string>> users)
    : users_(std::move(users)) {
    gnutls_rnd(GNUTLS_RND_KEY, key_.data(), key_.size());
}

CredentialCheck::Digest CredentialCheck::digest(const std::string &user,
                                                const std::string &password) const {
    // The user's length first, so that ("ab", "c") and ("a", "bc") differ.
    std::string text = std::to_string(user.size()) + ":" + user + password;
    Digest d{};
    gnutls_hmac_fast(GNUTLS_MAC_SHA256, key_.data(), key_.size(), text.data(), text.size(),
                     d.data());
    std::fill(text.begin(), text.end(), '\0');
    return d;
}

bool CredentialCheck::remembered(const Digest &d) {
    // Every slot compared in full, whatever matched: the time says nothing of which.
    unsigned char found = 0;
    for (unsigned i = 0; i < n_remembered_; ++i) {
        unsigned char differ = 0;
        for (size_t b = 0; b < d.size(); ++b) differ |= remembered_[i][b] ^ d[b];
        found |= static_cast<unsigned char>(differ == 0);
    }
    return found != 0;
}

bool CredentialCheck::take_token(double now_s) {
    if (started_) tokens_ = std::min(kChecksBurst, tokens_ + (now_s - last_s_) * kChecksPerSecond);
    started_ = true;
    last_s_ = now_s;
    if (tokens_ < 1) return false;
    tokens_ -= 1;
    return true;
}

CredentialVerdict CredentialCheck::check(const std::string &user, const std::string &password,
                                         double now_s) {
    const Digest d = digest(user, password);
    {
        std::lock_guard<std::mutex> guard(lock_);
        if (remembered(d)) return CredentialVerdict::match;
        if (!take_token(now_s)) return CredentialVerdict::throttled;
    }
    std::unique_lock<std::mutex> hashing(hashing_, std::try_to_lock);
    if (!hashing.owns_lock()) return CredentialVerdict::throttled;
    if (!basic_auth_matches(users_, user, password)) return CredentialVerdict::wrong;
    std::lock_guard<std::mutex> guard(lock_);
    if (!remembered(d)) {
        remembered_[next_] = d;
        next_ = (next_ + 1) % kRemembered;
        n_remembered_ = std::min(n_remembered_ + 1, kRemembered);
    }
    return CredentialVerdict::match;
}

}  // namespace floodgate
