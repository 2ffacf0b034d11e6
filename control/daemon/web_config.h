// floodctl daemon --web-config-file: the metrics endpoint's TLS and basic auth, in the format
// every Prometheus exporter built on exporter-toolkit takes (its web.config.file):
//
//   tls_server_config:
//     cert_file: server.crt          # relative paths are the file's directory's
//     key_file: server.key           # a secret: readable by its owner only
//     client_auth_type: RequireAndVerifyClientCert   # or VerifyClientCertIfGiven, NoClientCert
//     client_ca_file: clients-ca.crt
//     min_version: TLS12             # TLS10 to TLS13; max_version too
//   basic_auth_users:
//     prometheus: $2y$10$...         # bcrypt hashes (htpasswd -nbBC 10 USER PASSWORD)
//
// Read with the rules' YAML reader: an unknown field (exporter-toolkit's cipher_suites,
// curve_preferences, client_allowed_sans and http_server_config among them, which floodctl does
// not implement) is refused with file, line and field rather than ignored.
#pragma once

#include <optional>
#include <string>

#include "control/metrics/web_auth.h"

namespace floodgate {

// The file at path and the files it names, read and checked; nullopt with *why (the file, line
// and field where there is one) if any is refused.
std::optional<WebAuth> load_web_config(const std::string &path, std::string *why);

}  // namespace floodgate
