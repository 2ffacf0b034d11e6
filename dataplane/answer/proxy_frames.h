// The two segments syn-proxy writes toward the server, besides its SYN-ACK to the client
// (answer_syn_proxy.cpp). Pure functions over a frame's bytes, like the answers, and built in
// the buffer of the segment they replace:
//
//   server_syn  over the client's ACK that completed floodgate's handshake (a valid cookie),
//               going on to the server: <SEQ=client ISN><CTL=SYN>, the client's window, and the
//               options the cookie carried (MSS class, SACK-permitted, window scale) as the
//               client's SYN offered them. It may be longer than the ACK (a client without
//               timestamps sends a 20-byte ACK; the SYN carries up to 12 bytes of options), so
//               the buffer's capacity is given. A payload the ACK carried is overwritten: the
//               caller copies the segment first if it is to go on after the handshake.
//   server_ack  over the server's SYN-ACK, going back to the server: <SEQ=client ISN + 1>
//               <ACK=server ISN + 1><CTL=ACK>, the client's window, no options. Never longer
//               than the SYN-ACK. The caller has checked that the SYN-ACK acknowledges the
//               connection's SYN (its ACK is client ISN + 1); the ISN given is the connection's.
//
// Fresh IP headers as the answers write them (answer.h: no options or extension headers, TTL
// 64), checksums in software; Ethernet and VLAN tags as the frame had them (server_ack swaps the
// Ethernet addresses, as an answer does).
#pragma once

#include <cstdint>

#include "dataplane/core/parse.h"
#include "dataplane/core/tcp_options.h"

namespace floodgate {

// The client's window as a SYN carries it (never scaled): its ACK's window field, shifted by the
// client's scale.
uint16_t syn_window(uint16_t ack_window, const ProxiedOptions &client);

// Writes the SYN over the ACK (info: parse_packet's view of it, a TCP segment with ACK) in a
// buffer of cap bytes; returns the SYN's frame length, or 0 (nothing written) if it does not fit.
uint32_t build_server_syn(const PacketInfo &info, uint8_t *frame, uint32_t len, uint32_t cap,
                          const ProxiedOptions &client, uint16_t window);

// Writes the ACK over the server's SYN-ACK (info: its view, len bytes); returns its length.
// window: the client's window field as the server reads it (scaled by the client's shift).
uint32_t build_server_ack(const PacketInfo &info, uint8_t *frame, uint32_t len, uint32_t client_isn,
                          uint16_t window);

}  // namespace floodgate
