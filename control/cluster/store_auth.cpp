#include "control/cluster/store_auth.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace floodgate {

namespace {

constexpr const char *kCredentialName = "redis-password";

bool readable(const std::string &path, std::string *why) {
    if (::access(path.c_str(), R_OK) == 0) return true;
    *why = "'" + path + "' cannot be read: " + std::strerror(errno);
    return false;
}

}  // namespace

std::optional<std::string> read_secret_text(const std::string &path, std::string *why,
                                            SecretAccess access) {
    // O_NOFOLLOW and fstat on what was opened: the file checked is the file read.
    const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        *why = "'" + path + "' cannot be read: " + std::strerror(errno);
        return std::nullopt;
    }
    struct stat st {};
    std::string text, error;
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        error = "'" + path + "' is not a regular file";
    } else if (access == SecretAccess::owner_only && (st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
        char mode[8];
        std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
        error = "'" + path + "' may be read or written by others than its owner (mode " + mode +
                "): chmod 600 it";
    } else {
        char buf[kMaxSecretBytes + 2];
        ssize_t n = 0;
        size_t got = 0;
        while (got < sizeof buf && (n = ::read(fd, buf + got, sizeof buf - got)) > 0)
            got += static_cast<size_t>(n);
        text.assign(buf, got);
        if (n < 0) error = "'" + path + "' cannot be read: " + std::strerror(errno);
    }
    ::close(fd);
    if (!error.empty()) {
        *why = error;
        return std::nullopt;
    }
    return text;
}

std::optional<std::string> read_secret_file(const std::string &path, std::string *why,
                                            SecretAccess access) {
    std::optional<std::string> text = read_secret_text(path, why, access);
    if (!text) return std::nullopt;
    text = text->substr(0, text->find('\n'));
    if (!text->empty() && text->back() == '\r') text->pop_back();
    if (text->empty() || text->size() > kMaxSecretBytes) {
        *why = "'" + path + "' must hold a secret of 1-" + std::to_string(kMaxSecretBytes) +
               " bytes on its first line";
        return std::nullopt;
    }
    return text;
}

std::optional<ClusterKeys> load_cluster_keys(const std::string &path, std::string *why) {
    const std::optional<std::string> text = read_secret_text(path, why);
    if (!text) return std::nullopt;
    if (text->size() > kMaxSecretBytes) {
        *why = "'" + path + "' is longer than " + std::to_string(kMaxSecretBytes) + " bytes";
        return std::nullopt;
    }
    return parse_cluster_keys(*text, why);
}

std::optional<StoreAuth> load_store_auth(const std::string &user, const std::string &password_file,
                                         const StoreTlsFiles &tls, std::string *why,
                                         const std::string &key_file) {
    StoreAuth a;
    a.user = user;
    a.tls = tls;
    std::string path = password_file, option = "--redis-password-file";
    SecretAccess access = SecretAccess::owner_only;
    if (path.empty()) {
        const char *dir = std::getenv("CREDENTIALS_DIRECTORY");
        const std::string credential =
            dir == nullptr ? std::string() : std::string(dir) + "/" + kCredentialName;
        if (!credential.empty() && ::access(credential.c_str(), F_OK) == 0) {
            path = credential;
            option = "the systemd credential " + std::string(kCredentialName);
            access = SecretAccess::systemd_credential;
        }
    }
    std::string reason;
    if (!path.empty()) {
        const std::optional<std::string> password = read_secret_file(path, &reason, access);
        if (!password) {
            *why = option + ": " + reason;
            return std::nullopt;
        }
        a.password = *password;
    }
    if (!user.empty() && a.password.empty()) {
        *why = "--redis-user needs a password (--redis-password-file)";
        return std::nullopt;
    }
    if (user.find_first_of(" \t\r\n") != std::string::npos || user.size() > 256) {
        *why = "--redis-user must be a name of at most 256 bytes without spaces";
        return std::nullopt;
    }
    if (!tls.on() && !(tls.name.empty() && tls.cert.empty() && tls.key.empty())) {
        *why = "--redis-tls-name, --redis-tls-cert and --redis-tls-key need --redis-tls-ca";
        return std::nullopt;
    }
    if (tls.cert.empty() != tls.key.empty()) {
        *why = "--redis-tls-cert and --redis-tls-key go together";
        return std::nullopt;
    }
    if (tls.on() && !readable(tls.ca, &reason)) {
        *why = "--redis-tls-ca: " + reason;
        return std::nullopt;
    }
    if (!tls.cert.empty() && !readable(tls.cert, &reason)) {
        *why = "--redis-tls-cert: " + reason;
        return std::nullopt;
    }
    if (!tls.key.empty() && !read_secret_file(tls.key, &reason)) {
        *why = "--redis-tls-key: " + reason;
        return std::nullopt;
    }
    if (!key_file.empty()) {
        const std::optional<ClusterKeys> keys = load_cluster_keys(key_file, &reason);
        if (!keys) {
            *why = "--cluster-key-file: " + reason;
            return std::nullopt;
        }
        a.keys = *keys;
        a.key_file = key_file;
    }
    return a;
}

}  // namespace floodgate
