#include "dataplane/core/tcp_options.h"

#include "dataplane/core/load_be.h"

namespace floodgate {

namespace {
constexpr uint32_t kTcpHeaderMin = 20;
}  // namespace

bool read_syn_options(const uint8_t *tcp, uint32_t tcp_len, SynOptions *out) {
    *out = SynOptions{};
    if (tcp_len < kTcpHeaderMin) return false;
    const uint32_t header_len = static_cast<uint32_t>(tcp[12] >> 4) * 4;
    if (header_len < kTcpHeaderMin || header_len > tcp_len) return false;
    uint32_t at = kTcpHeaderMin;
    while (at < header_len) {
        const uint8_t kind = tcp[at];
        if (kind == kTcpOptionEnd) break;
        if (kind == kTcpOptionNop) {
            ++at;
            continue;
        }
        if (at + 2 > header_len) return false;
        const uint8_t len = tcp[at + 1];
        if (len < 2 || at + len > header_len) return false;
        const uint8_t *v = tcp + at + 2;
        switch (kind) {
            case kTcpOptionMss:
                if (len != 4) return false;
                out->mss = load_be16(v);
                break;
            case kTcpOptionWindowScale:
                if (len != 3) return false;
                out->wscale = v[0] > kMaxWindowScale ? kMaxWindowScale : v[0];
                break;
            case kTcpOptionSackPermitted:
                if (len != 2) return false;
                out->sack_permitted = true;
                break;
            case kTcpOptionTimestamps:
                if (len != 10) return false;
                out->timestamps = true;
                out->ts_val = load_be32(v);
                out->ts_ecr = load_be32(v + 4);
                break;
            default:
                break;  // options the proxy does not carry (TFO, MPTCP, MD5) are left out
        }
        at += len;
    }
    return true;
}

}  // namespace floodgate
