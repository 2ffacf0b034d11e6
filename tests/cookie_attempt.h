// The connection attempt the cookie tests (test_syn_cookie.cpp, test_proxy_cookie.cpp) hash: a
// client in 198.18.0.0/15 or 2001:db8::/32 to a server, port 40000 to dst_port, as parse_packet
// would describe its segment (everything else zero).
#pragma once

#include <cstdint>
#include <cstring>

#include "dataplane/core/parse.h"

namespace floodgate::test {

inline PacketInfo cookie_attempt(uint8_t family, uint16_t dst_port) {
    PacketInfo p;
    std::memset(static_cast<void *>(&p), 0, sizeof p);
    p.family = family;
    const uint8_t src4[4] = {198, 18, 0, 7}, dst4[4] = {198, 19, 0, 9};
    const uint8_t src6[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7};
    const uint8_t dst6[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9};
    std::memcpy(p.src, family == 4 ? src4 : src6, family == 4 ? 4 : 16);
    std::memcpy(p.dst, family == 4 ? dst4 : dst6, family == 4 ? 4 : 16);
    p.src_port = 40000;
    p.dst_port = dst_port;
    return p;
}

}  // namespace floodgate::test
