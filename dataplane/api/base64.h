// Base64 (RFC 4648, with padding) for binary blobs in the control protocol's JSON messages:
// the payload rules' compiled databases a load request carries
// (dataplane/patterns/payload_database.h).
#pragma once

#include <optional>
#include <string>

namespace floodgate {

std::string base64_encode(const std::string &bytes);
// nullopt for anything that is not well-formed base64 (length, alphabet, where padding is);
// the unused bits before padding are not checked.
std::optional<std::string> base64_decode(const std::string &text);

}  // namespace floodgate
