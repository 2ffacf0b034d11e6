// The control protocol between floodctl (CLI and daemon) and the dataplane: newline-delimited
// JSON over UNIX stream sockets, one request object per line, one response object per line.
// Every request has "cmd"; every response has "ok" and, when false, "error".
//
// The commands and their requests are listed once each: the dataplane's in
// dataplane/api/dataplane_commands.h, the daemon's own (floodctl CLI -> floodctl daemon) in
// dataplane/api/daemon_commands.h.
#pragma once

#include <cstddef>
#include <string_view>

namespace floodgate {

// The run directory: the one directory either process creates (mode 0700) when a socket path
// needs it; any other socket directory must exist already (dataplane/api/unix_socket.h).
inline constexpr const char *kRunDirectory = "/run/floodgate";
inline constexpr const char *kDefaultDataplaneSocket = "/run/floodgate/dataplane.sock";
inline constexpr const char *kDefaultDaemonSocket = "/run/floodgate/floodctl.sock";
static_assert(std::string_view(kDefaultDataplaneSocket).starts_with("/run/floodgate/") &&
                  std::string_view(kDefaultDaemonSocket).starts_with("/run/floodgate/") &&
                  std::string_view(kRunDirectory) == "/run/floodgate",
              "the default sockets live in kRunDirectory, the one directory that is created");
inline constexpr const char *kDefaultMetricsAddress = "127.0.0.1:9417";

// The member of every request that names its command; a request naming it twice is refused.
inline constexpr const char *kCommandField = "cmd";

// A request or response line longer than this is refused (rules files are far smaller).
inline constexpr size_t kMaxMessageBytes = 32u << 20;
// Requests nest objects and arrays at most this deep and hold at most this many values (a
// rules file of 200,000 prefixes is about as many); more is refused before a document is built.
inline constexpr unsigned kMaxMessageDepth = 16;
// A rules document is at most 2^20 values (rules/doc.h) and a message or reply carries at most
// one; the rest of a reply (per-rule rows, status) is far below the margin.
inline constexpr size_t kMaxMessageValues = (1u << 20) + 65536;
// Most runtime overrides the dataplane holds at once (each costs LPM memory).
inline constexpr size_t kMaxOverrides = 65536;
// Most escalations and most (rule, key) charges one cluster_sync request may carry.
inline constexpr size_t kMaxClusterEscalations = 1u << 16;
inline constexpr size_t kMaxClusterCharges = 1u << 18;
// Longest override TTL: ten years.
inline constexpr long long kMaxOverrideTtlSeconds = 10ll * 366 * 24 * 3600;

}  // namespace floodgate
