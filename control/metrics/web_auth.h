// What the metrics endpoint asks of a scraper, as a Prometheus exporter's web.config.file says
// (control/daemon/web_config.h reads the file): TLS with this server's certificate, optionally a
// client certificate verified against a CA, and HTTP basic auth checked against bcrypt hashes.
// Without a file the endpoint is plain HTTP and open, as before.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace floodgate {

// exporter-toolkit's client_auth_type values that verify what they are given; the two that
// take a certificate without verifying it (RequestClientCert, RequireAnyClientCert) prove
// nothing and are refused by the reader.
enum class ClientAuth { none, verify_if_given, require_and_verify };

struct WebTls {
    std::string cert_pem;       // the server's certificate (chain), PEM
    std::string key_pem;        // its key, PEM: read as a secret
    std::string client_ca_pem;  // the CAs a client certificate must chain to ("": none)
    ClientAuth client_auth = ClientAuth::none;
    std::string priorities;  // GnuTLS priority string: the TLS versions allowed
    bool operator==(const WebTls &) const = default;
};

struct WebAuth {
    bool tls_on = false;
    WebTls tls;
    // Basic auth's users and their bcrypt hashes ($2a$, $2b$ or $2y$), in the file's order;
    // none: no basic auth.
    std::vector<std::pair<std::string, std::string>> users;
    bool operator==(const WebAuth &) const = default;
};

// Requests the endpoint refused: no basic auth credentials (or not readable as such), a user or
// password that does not match, no client certificate verified against client_ca_file,
// credentials not checked (over the bcrypt budget, credential_check.h); and connections that
// closed without a request (a TLS handshake that failed, a client that sent nothing).
struct AuthRefusals {
    uint64_t no_credentials = 0;
    uint64_t wrong_credentials = 0;
    uint64_t client_certificate = 0;
    uint64_t throttled = 0;
    uint64_t no_request = 0;
};

// Whether hash is a bcrypt hash libxcrypt can check a password against.
bool bcrypt_hash_usable(const std::string &hash);

// Whether user and password are one of users'. The time taken does not say whether the user
// exists: an unknown user's password is hashed against the first user's hash all the same,
// and the hashes are compared in constant time.
bool basic_auth_matches(const std::vector<std::pair<std::string, std::string>> &users,
                        const std::string &user, const std::string &password);

}  // namespace floodgate
