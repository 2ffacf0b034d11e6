// The endpoint's basic auth with its cost bounded. A bcrypt check costs tens of milliseconds
// of CPU by design (cost 10: about 60 ms here), so without a bound anyone who can reach the
// port can keep the endpoint's threads hashing wrong passwords and starve the scrape. Here:
// - credentials that matched are remembered (a keyed SHA-256 of user and password, never the
//   password; kRemembered of them), so a scraper pays for bcrypt once, not every scrape;
// - at most one bcrypt check runs at a time: a request that would wait for one is refused at
//   once (HTTP 429), which keeps the other server thread free for remembered scrapers;
// - at most kChecksPerSecond checks a second (a token bucket of kChecksBurst): past it,
//   refused (429) without hashing, counted as throttled.
// So a flood of wrong passwords costs at most kChecksPerSecond bcrypt checks a second, and a
// scraper whose credentials matched once is answered through it.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace floodgate {

enum class CredentialVerdict { match, wrong, throttled };

class CredentialCheck {
  public:
    static constexpr unsigned kRemembered = 8;
    static constexpr double kChecksPerSecond = 4;
    static constexpr double kChecksBurst = 4;

    explicit CredentialCheck(std::vector<std::pair<std::string, std::string>> users);

    // user and password against the users' hashes, at now_s (a steady clock, seconds).
    // Thread-safe.
    CredentialVerdict check(const std::string &user, const std::string &password, double now_s);

  private:
    using Digest = std::array<unsigned char, 32>;
    Digest digest(const std::string &user, const std::string &password) const;
    bool remembered(const Digest &d);
    bool take_token(double now_s);

    std::vector<std::pair<std::string, std::string>> users_;
    std::array<unsigned char, 32> key_{};  // the digests' key, random for each server
    std::mutex lock_;                      // the remembered digests and the bucket
    std::array<Digest, kRemembered> remembered_{};
    unsigned n_remembered_ = 0, next_ = 0;
    double tokens_ = kChecksBurst, last_s_ = 0;
    bool started_ = false;
    std::mutex hashing_;  // held by the one bcrypt check that runs
};

}  // namespace floodgate
