// The metrics endpoint's web config file (control/daemon/web_config.h).
#include "control/daemon/web_config.h"

#include <initializer_list>
#include <string_view>
#include <utility>

#include "control/cluster/store_auth.h"
#include "rules/doc_reader.h"
#include "rules/load.h"

namespace floodgate {

namespace {

using validation::Field;
using validation::Fields;

constexpr std::pair<std::string_view, ClientAuth> kClientAuth[] = {
    {"NoClientCert", ClientAuth::none},
    {"VerifyClientCertIfGiven", ClientAuth::verify_if_given},
    {"RequireAndVerifyClientCert", ClientAuth::require_and_verify},
};
// exporter-toolkit's names, in order, and GnuTLS's.
constexpr std::pair<std::string_view, const char *> kVersions[] = {{"TLS10", "VERS-TLS1.0"},
                                                                   {"TLS11", "VERS-TLS1.1"},
                                                                   {"TLS12", "VERS-TLS1.2"},
                                                                   {"TLS13", "VERS-TLS1.3"}};
constexpr size_t kDefaultMinVersion = 2;  // TLS12, as exporter-toolkit

class WebConfigReader : public validation::DocReader {
  public:
    WebConfigReader(const std::string &file, std::string dir)
        : DocReader(file), dir_(std::move(dir)) {}

    WebAuth read(const DocNode &doc) const {
        WebAuth auth;
        const Fields top =
            fields(Field{&doc, "", doc.line}, {"tls_server_config", "basic_auth_users"});
        if (const Field *tls = top.find("tls_server_config")) {
            auth.tls_on = true;
            auth.tls = read_tls(*tls);
        }
        if (const Field *users = top.find("basic_auth_users")) auth.users = read_users(*users);
        return auth;
    }

  private:
    WebTls read_tls(const Field &at) const {
        const Fields f = fields(at, {"cert_file", "key_file", "client_auth_type", "client_ca_file",
                                     "min_version", "max_version"});
        WebTls tls;
        tls.cert_pem = read_file(require(f, "cert_file"));
        const Field &key = require(f, "key_file");
        std::string why;
        const std::optional<std::string> key_pem = read_secret_text(path(key), &why);
        if (!key_pem) fail(key, why);
        if (key_pem->size() > kMaxSecretBytes)
            fail(key, "longer than " + std::to_string(kMaxSecretBytes) + " bytes");
        tls.key_pem = *key_pem;
        if (const Field *mode = f.find("client_auth_type")) {
            const std::string &name = scalar(*mode);
            if (name == "RequestClientCert" || name == "RequireAnyClientCert")
                fail(*mode,
                     "'" + name +
                         "' takes a client certificate without verifying it, which proves "
                         "nothing: use VerifyClientCertIfGiven or RequireAndVerifyClientCert");
            tls.client_auth = choice(*mode, kClientAuth);
        }
        const Field *ca = f.find("client_ca_file");
        if (ca != nullptr) tls.client_ca_pem = read_file(*ca);
        if (tls.client_auth != ClientAuth::none && ca == nullptr)
            fail(child(at, "client_ca_file"), "missing: client_auth_type verifies against it");
        if (tls.client_auth == ClientAuth::none && ca != nullptr)
            fail(*ca, "client_auth_type " + std::string(kClientAuth[0].first) +
                          " would never look at it");
        tls.priorities = priorities(f);
        return tls;
    }

    // The GnuTLS priority string allowing min_version to max_version.
    std::string priorities(const Fields &f) const {
        size_t lo = kDefaultMinVersion, hi = std::size(kVersions) - 1;
        if (const Field *min = f.find("min_version")) lo = version(*min);
        if (const Field *max = f.find("max_version")) hi = version(*max);
        if (lo > hi) fail(*f.find("max_version"), "lower than min_version");
        std::string text = "NORMAL:-VERS-ALL";
        for (size_t v = lo; v <= hi; ++v) text += std::string(":+") + kVersions[v].second;
        return text;
    }

    size_t version(const Field &at) const {
        const std::string &name = scalar(at);
        for (size_t v = 0; v < std::size(kVersions); ++v)
            if (kVersions[v].first == name) return v;
        fail(at, "unknown value '" + name +
                     "' (expected one of: " + validation::join_names(kVersions) + ")");
    }

    std::vector<std::pair<std::string, std::string>> read_users(const Field &at) const {
        if (at.node->kind != DocNode::Kind::map)
            fail(at, std::string("map expected, found ") + validation::describe(*at.node));
        std::vector<std::pair<std::string, std::string>> users;
        for (const DocEntry &e : at.node->entries) {
            const Field user{&e.value, child(at, e.key).path, e.line};
            if (e.key.empty() || e.key.find(':') != std::string::npos)
                fail(user,
                     "a user name must be non-empty and without ':' (basic auth's separator)");
            for (const auto &[name, hash] : users)
                if (name == e.key) fail(user, "user given twice");
            const std::string &hash = scalar(user);
            if (!bcrypt_hash_usable(hash))
                fail(user,
                     "not a bcrypt hash ($2a$, $2b$ or $2y$, 60 characters): make one with "
                     "htpasswd -nbBC 10 USER PASSWORD");
            users.emplace_back(e.key, hash);
        }
        if (users.empty()) fail(at, "no user (leave the field out for no basic auth)");
        return users;
    }

    // A certificate file: not secret, bounded as a rules file is.
    std::string read_file(const Field &at) const {
        try {
            return read_config_file(path(at));
        } catch (const ConfigError &e) {
            fail(at, e.what());
        }
    }

    std::string path(const Field &at) const {
        const std::string &name = scalar(at);
        if (name.empty()) fail(at, "empty path");
        return name.front() == '/' || dir_.empty() ? name : dir_ + "/" + name;
    }

    std::string dir_;
};

}  // namespace

std::optional<WebAuth> load_web_config(const std::string &path, std::string *why) {
    const size_t slash = path.rfind('/');
    const std::string dir =
        slash == std::string::npos ? "" : path.substr(0, slash == 0 ? 1 : slash);
    try {
        return WebConfigReader(path, dir).read(yaml_to_doc(read_config_file(path), path));
    } catch (const ConfigError &e) {
        *why = e.what();
        return std::nullopt;
    }
}

}  // namespace floodgate
