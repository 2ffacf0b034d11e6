// Who this box is to the cluster's Redis, and how the channel is kept: an ACL user and its
// password, and TLS with the server's certificate verified against a CA and a name (an optional
// client certificate beside). floodctl daemon's options give them, never the rules file: the
// rules file is the same on every box and read by the dataplane, while a user and its password
// belong to one box and its daemon's user alone (docs/cluster.md, "Several boxes").
#pragma once

#include <optional>
#include <string>

#include "control/cluster/entry_signing.h"

namespace floodgate {

inline constexpr size_t kMaxSecretBytes = 4096;

struct StoreTlsFiles {
    std::string ca;    // PEM, the CAs the server's certificate must chain to ("": no TLS)
    std::string name;  // the name (or IP address) the certificate must carry ("": the host's)
    std::string cert;  // PEM, this box's certificate, with key ("": none)
    std::string key;   // PEM, the certificate's key: a secret, readable by its owner only
    bool on() const { return !ca.empty(); }
    bool operator==(const StoreTlsFiles &) const = default;
};

struct StoreAuth {
    std::string user;      // the ACL user ("": Redis's default user)
    std::string password;  // "": no AUTH is sent
    StoreTlsFiles tls;
    ClusterKeys keys;      // the cluster key(s) that sign entries (none: no sync, ClusterSync)
    std::string key_file;  // where they were read from, watched for a rotation ("": none given)
    bool operator==(const StoreAuth &) const = default;
};

// Who may read a secret file: its owner only (its mode says so), or as systemd says (a
// credential, which systemd restricts to the unit's user, with an ACL where that user is not the
// owner: the ACL's mask then shows in the group bits).
enum class SecretAccess { owner_only, systemd_credential };

// The whole of a secret file (its first kMaxSecretBytes + 2 bytes), refused as
// read_secret_file says but for its first line.
std::optional<std::string> read_secret_text(const std::string &path, std::string *why,
                                            SecretAccess access = SecretAccess::owner_only);

// The first line of a secret file, refused (nullopt, *why) unless it is a regular file of
// 1..kMaxSecretBytes bytes that, with owner_only, only its owner may read or write: a secret
// others can read is no longer one.
std::optional<std::string> read_secret_file(const std::string &path, std::string *why,
                                            SecretAccess access = SecretAccess::owner_only);

// The cluster key file (one or two lines "id secret", entry_signing.h), read as a secret that
// only its owner may read, refused with *why naming the file.
std::optional<ClusterKeys> load_cluster_keys(const std::string &path, std::string *why);

// The daemon's options read into a StoreAuth: the password from password_file, or, when that is
// empty and systemd passes credentials ($CREDENTIALS_DIRECTORY), from its "redis-password" if
// present. Each file is checked here, at start, so that a bad one is refused before anything
// runs; *why names the option. The cluster key(s) from key_file (entry_signing.h), if given.
std::optional<StoreAuth> load_store_auth(const std::string &user, const std::string &password_file,
                                         const StoreTlsFiles &tls, std::string *why,
                                         const std::string &key_file = "");

}  // namespace floodgate
