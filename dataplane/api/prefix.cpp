#include "dataplane/api/prefix.h"

#include <arpa/inet.h>

#include <charconv>

namespace floodgate {

namespace {

std::optional<Prefix> refuse(std::string *why, std::string reason) {
    if (why != nullptr) *why = std::move(reason);
    return std::nullopt;
}

}  // namespace

std::optional<Prefix> parse_prefix(const std::string &text, std::string *why) {
    const size_t slash = text.find('/');
    const std::string addr_text = text.substr(0, slash);

    Prefix p;
    // inet_pton is strict: no whitespace, no zone ("%eth0"), no short IPv4 forms ("10.1") and
    // no leading zeros in IPv4 octets, so what it accepts is what the operator meant.
    if (addr_text.find(':') != std::string::npos) {
        p.family = 6;
        if (inet_pton(AF_INET6, addr_text.c_str(), p.addr.data()) != 1)
            return refuse(why, "'" + addr_text + "' is not an IPv6 address");
    } else {
        p.family = 4;
        if (inet_pton(AF_INET, addr_text.c_str(), p.addr.data()) != 1)
            return refuse(why, "'" + addr_text + "' is not an IPv4 address");
    }
    const unsigned max_len = p.family == 4 ? 32 : 128;

    unsigned len = max_len;
    if (slash != std::string::npos) {
        const std::string len_text = text.substr(slash + 1);
        const char *first = len_text.data();
        const char *last = first + len_text.size();
        // from_chars takes no sign and no whitespace; end != last refuses trailing junk.
        auto [end, ec] = std::from_chars(first, last, len);
        if (len_text.empty() || len_text.size() > 3 || ec != std::errc() || end != last)
            return refuse(why, "prefix length '" + len_text + "' is not a number");
        if (len > max_len)
            return refuse(why, "prefix length /" + len_text + " is out of range for IPv" +
                                   std::to_string(p.family) + " (0-" + std::to_string(max_len) +
                                   ")");
    }
    p.len = static_cast<uint8_t>(len);

    IpAddr masked = p.addr;
    mask_addr(&masked, p.len);
    if (masked != p.addr) {
        return refuse(why, "host bits are set below /" + std::to_string(len) + " (did you mean " +
                               format_addr(p.family, masked) + "/" + std::to_string(len) + "?)");
    }
    return p;
}

std::string format_addr(uint8_t family, const IpAddr &addr) {
    char buf[INET6_ADDRSTRLEN];
    const int af = family == 4 ? AF_INET : AF_INET6;
    if ((family != 4 && family != 6) || inet_ntop(af, addr.data(), buf, sizeof buf) == nullptr)
        return "<bad address>";
    return buf;
}

std::string format_prefix(const Prefix &p) {
    return format_addr(p.family, p.addr) + "/" + std::to_string(p.len);
}

}  // namespace floodgate
