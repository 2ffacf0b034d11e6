#include "rules/payload_text.h"

namespace floodgate {

bool parse_literal(const std::string &text, std::string *bytes, std::string *why) {
    bytes->clear();
    const auto hex = [](char c) {
        return c >= '0' && c <= '9'   ? c - '0'
               : c >= 'a' && c <= 'f' ? c - 'a' + 10
               : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                      : -1;
    };
    for (size_t i = 0; i < text.size(); ++i) {
        const unsigned char c = static_cast<unsigned char>(text[i]);
        if (c < 0x20 || c >= 0x7f) {
            *why = "byte " + std::to_string(i) +
                   " is not printable ASCII (write bytes as \\xHH, in single quotes)";
            return false;
        }
        if (c != '\\') {
            bytes->push_back(static_cast<char>(c));
            continue;
        }
        if (i + 1 >= text.size()) {
            *why = "a lone \\ at the end (write \\\\ for a backslash)";
            return false;
        }
        const char e = text[++i];
        switch (e) {
            case '\\':
                bytes->push_back('\\');
                break;
            case 'n':
                bytes->push_back('\n');
                break;
            case 'r':
                bytes->push_back('\r');
                break;
            case 't':
                bytes->push_back('\t');
                break;
            case '0':
                bytes->push_back('\0');
                break;
            case 'x': {
                const int hi = i + 1 < text.size() ? hex(text[i + 1]) : -1;
                const int lo = i + 2 < text.size() ? hex(text[i + 2]) : -1;
                if (hi < 0 || lo < 0) {
                    *why = "\\x at byte " + std::to_string(i - 1) + " needs two hex digits";
                    return false;
                }
                bytes->push_back(static_cast<char>(hi * 16 + lo));
                i += 2;
                break;
            }
            default:
                *why =
                    std::string("unknown escape \\") + e + " (known: \\xHH \\\\ \\n \\r \\t \\0)";
                return false;
        }
    }
    if (bytes->empty()) {
        *why = "an empty literal would match every packet";
        return false;
    }
    return true;
}

}  // namespace floodgate
