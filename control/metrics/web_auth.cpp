// The endpoint's basic auth against bcrypt hashes, through libxcrypt (control/metrics/web_auth.h).
#include "control/metrics/web_auth.h"

#include <crypt.h>

#include <memory>

namespace floodgate {

namespace {

constexpr size_t kBcryptHashSize = 60;  // "$2b$10$" + 22 characters of salt + 31 of hash

// password hashed with hash's salt and cost; "" when libxcrypt refuses the setting.
std::string bcrypt(const std::string &password, const std::string &hash) {
    // struct crypt_data is 32 KiB: not on a server thread's stack.
    auto data = std::make_unique<crypt_data>();
    const char *out = crypt_rn(password.c_str(), hash.c_str(), data.get(), sizeof *data);
    return out == nullptr ? std::string() : std::string(out);
}

bool same_in_constant_time(const std::string &a, const std::string &b) {
    if (a.size() != b.size()) return false;  // both are a hash's length, known to all
    unsigned char differ = 0;
    for (size_t i = 0; i < a.size(); ++i) differ |= static_cast<unsigned char>(a[i] ^ b[i]);
    return differ == 0;
}

}  // namespace

bool bcrypt_hash_usable(const std::string &hash) {
    if (hash.size() != kBcryptHashSize) return false;
    if (hash.compare(0, 4, "$2a$") != 0 && hash.compare(0, 4, "$2b$") != 0 &&
        hash.compare(0, 4, "$2y$") != 0)
        return false;
    return bcrypt("", hash).size() == kBcryptHashSize;
}

bool basic_auth_matches(const std::vector<std::pair<std::string, std::string>> &users,
                        const std::string &user, const std::string &password) {
    if (users.empty()) return false;
    const std::string *hash = &users.front().second;
    bool known = false;
    for (const auto &[name, h] : users)
        if (name == user) {
            hash = &h;
            known = true;
        }
    // A password with a NUL would be cut short by crypt: it matches nothing.
    const bool whole = password.find('\0') == std::string::npos;
    const bool same = same_in_constant_time(bcrypt(password, *hash), *hash);
    return known && whole && same;
}

}  // namespace floodgate
