// Wire constants shared by the parser, rule matching and the config loader: IP protocol
// numbers (IANA), the TCP header's field offsets and flag bits (RFC 9293 section 3.1; ECE and
// CWR from RFC 3168) and the TCP option kinds syn-proxy reads and writes (IANA).
#pragma once

#include <cstdint>

namespace floodgate {

inline constexpr uint8_t kProtoIcmp = 1;
inline constexpr uint8_t kProtoTcp = 6;
inline constexpr uint8_t kProtoUdp = 17;
inline constexpr uint8_t kProtoIcmpv6 = 58;

// Byte offsets of the TCP header's fields from its first byte (RFC 9293 section 3.1).
inline constexpr uint32_t kTcpSrcPortOffset = 0;
inline constexpr uint32_t kTcpDstPortOffset = 2;
inline constexpr uint32_t kTcpSeqOffset = 4;
inline constexpr uint32_t kTcpAckOffset = 8;
inline constexpr uint32_t kTcpDataOffsetOffset = 12;  // the header's length in words, high nibble
inline constexpr uint32_t kTcpFlagsOffset = 13;
inline constexpr uint32_t kTcpWindowOffset = 14;
inline constexpr uint32_t kTcpChecksumOffset = 16;
inline constexpr uint32_t kTcpUrgentOffset = 18;

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
