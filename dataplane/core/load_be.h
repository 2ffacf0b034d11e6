// Big-endian (network order) fields read from frame bytes, at any alignment: the parser's and
// the answers' one definition (the answers, a room above, see this one).
#pragma once

#include <cstdint>

namespace floodgate {

inline uint16_t load_be16(const uint8_t *p) {
    return static_cast<uint16_t>(p[0] << 8 | p[1]);
}
inline uint32_t load_be32(const uint8_t *p) {
    return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3];
}

}  // namespace floodgate
