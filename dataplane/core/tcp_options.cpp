#include "dataplane/core/tcp_options.h"

#include "dataplane/core/load_be.h"

namespace floodgate {

bool read_syn_options(const uint8_t *tcp, uint32_t tcp_len, SynOptions *out) {
    *out = SynOptions{};
    const uint32_t header_len = tcp_header_len(tcp, tcp_len);
    if (header_len == 0) return false;
    return walk_tcp_options(tcp, header_len, [&](uint8_t kind, uint32_t at, uint8_t len) {
        const uint8_t *v = tcp + at + 2;
        switch (kind) {
            case kTcpOptionMss:
                if (len != 4) return false;
                out->mss = load_be16(v);
                return true;
            case kTcpOptionWindowScale:
                if (len != 3) return false;
                out->wscale = v[0] > kMaxWindowScale ? kMaxWindowScale : v[0];
                return true;
            case kTcpOptionSackPermitted:
                if (len != 2) return false;
                out->sack_permitted = true;
                return true;
            case kTcpOptionTimestamps:
                if (len != 10) return false;
                out->timestamps = true;
                out->ts_val = load_be32(v);
                out->ts_ecr = load_be32(v + 4);
                return true;
            default:
                return true;  // options the proxy does not carry (TFO, MPTCP, MD5) are left out
        }
    });
}

}  // namespace floodgate
