// How an operator writes a payload literal (match.payload in a rules file) to the bytes the
// pattern engine (dataplane/patterns/payload_database.h) compiles.
#pragma once

#include <string>

namespace floodgate {

// A literal's text as written (\xHH, \\, \n, \r, \t, \0 escapes; printable ASCII otherwise) to
// its bytes; false with *why.
bool parse_literal(const std::string &text, std::string *bytes, std::string *why);

}  // namespace floodgate
