// Wire constants shared by the parser, rule matching and the config loader: IP protocol
// numbers (IANA), TCP flag bits (RFC 9293 section 3.1; ECE and CWR from RFC 3168) and the TCP
// option kinds syn-proxy reads and writes (IANA).
#pragma once

#include <cstdint>

namespace floodgate {

inline constexpr uint8_t kProtoIcmp = 1;
inline constexpr uint8_t kProtoTcp = 6;
inline constexpr uint8_t kProtoUdp = 17;
inline constexpr uint8_t kProtoIcmpv6 = 58;

inline constexpr uint8_t kTcpFin = 0x01;
inline constexpr uint8_t kTcpSyn = 0x02;
inline constexpr uint8_t kTcpRst = 0x04;
inline constexpr uint8_t kTcpPsh = 0x08;
inline constexpr uint8_t kTcpAck = 0x10;
inline constexpr uint8_t kTcpUrg = 0x20;
inline constexpr uint8_t kTcpEce = 0x40;
inline constexpr uint8_t kTcpCwr = 0x80;

inline constexpr uint8_t kTcpOptionEnd = 0;
inline constexpr uint8_t kTcpOptionNop = 1;
inline constexpr uint8_t kTcpOptionMss = 2;
inline constexpr uint8_t kTcpOptionWindowScale = 3;
inline constexpr uint8_t kTcpOptionSackPermitted = 4;
inline constexpr uint8_t kTcpOptionSack = 5;
inline constexpr uint8_t kTcpOptionTimestamps = 8;

}  // namespace floodgate
