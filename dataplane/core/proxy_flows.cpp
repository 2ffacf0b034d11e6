#include "dataplane/core/proxy_flows.h"

#include <rte_hash.h>
#include <rte_prefetch.h>

#include <cstring>
#include <string>

namespace floodgate {

uint32_t ProxyFlows::hash(const FlowKey &k) const {
    uint64_t w[5];
    std::memcpy(w, &k, sizeof w);
    return static_cast<uint32_t>(
        keyed_hash(seed_, keyed_hash(seed_, w[0], w[1], w[4]), w[2], w[3]));
}

FlowKey flow_key(const PacketInfo &p, bool from_client) {
    FlowKey k;
    std::memset(&k, 0, sizeof k);
    std::memcpy(k.client, from_client ? p.src : p.dst, 16);
    std::memcpy(k.server, from_client ? p.dst : p.src, 16);
    k.client_port = from_client ? p.src_port : p.dst_port;
    k.server_port = from_client ? p.dst_port : p.src_port;
    k.family = p.family;
    return k;
}

ProxyFlows::ProxyFlows(uint32_t capacity, uint64_t server_timeout_ns, uint64_t idle_timeout_ns,
                       const HashSeed &seed, int socket)
    : capacity_(capacity),
      seed_(seed),
      server_timeout_ns_(server_timeout_ns),
      idle_timeout_ns_(idle_timeout_ns) {
    const std::string name = "fg_flows_" + std::to_string(reinterpret_cast<uintptr_t>(this));
    rte_hash_parameters p{};
    p.name = name.c_str();
    // A quarter more room than connections, so that rte_hash's cuckoo paths find a slot for
    // every open below the capacity (at 8 entries a bucket and 80 % load, they do).
    p.entries = capacity + capacity / 4 + 8;
    p.key_len = sizeof(FlowKey);
    // Every call passes the keyed hash itself (the _with_hash calls): rte_hash's own functions
    // are unkeyed.
    p.socket_id = socket;
    hash_ = rte_hash_create(&p);
    if (hash_ == nullptr) return;
    const int32_t max_id = rte_hash_max_key_id(hash_);
    slots_ = max_id < 0 ? 0 : static_cast<uint32_t>(max_id) + 1;
    flows_ = std::make_unique<ProxyFlow[]>(slots_);
}

ProxyFlows::~ProxyFlows() {
    rte_hash_free(hash_);
}

ProxyFlow *ProxyFlows::find(const FlowKey &k) {
    const hash_sig_t sig = hash(k);
    if (present_[presence(sig)] == 0) return nullptr;  // certainly absent
    const int32_t pos = rte_hash_lookup_with_hash(hash_, &k, sig);
    return pos < 0 ? nullptr : &flows_[pos];
}

void ProxyFlows::find_bulk(const FlowKey *const *keys, unsigned n, ProxyFlow **out) {
    static_assert(kFindBulkMax == RTE_HASH_LOOKUP_BULK_MAX);
    hash_sig_t sigs[kFindBulkMax];
    int32_t positions[kFindBulkMax];
    for (unsigned i = 0; i < n; ++i) sigs[i] = hash(*keys[i]);
    // rte_hash takes the keys as const void ** (it writes none of them).
    rte_hash_lookup_with_hash_bulk(
        hash_, reinterpret_cast<const void **>(const_cast<const FlowKey **>(keys)), sigs, n,
        positions);
    for (unsigned i = 0; i < n; ++i) {
        out[i] = positions[i] < 0 ? nullptr : &flows_[positions[i]];
        if (out[i] != nullptr) rte_prefetch0(out[i]);
    }
}

ProxyFlow *ProxyFlows::open(const FlowKey &k, uint64_t now_ns) {
    if (size_ >= capacity_) {
        ++stats_.full;
        return nullptr;
    }
    const hash_sig_t sig = hash(k);
    const int32_t pos = rte_hash_add_key_with_hash(hash_, &k, sig);
    if (pos < 0 || static_cast<uint32_t>(pos) >= slots_) {  // -ENOSPC: its buckets are full
        if (pos >= 0) rte_hash_del_key_with_hash(hash_, &k, sig);
        ++stats_.full;
        return nullptr;
    }
    ProxyFlow &f = flows_[pos];
    if (f.state != FlowState::free) return &f;  // already open: rte_hash gave its position back
    f = ProxyFlow{};
    f.key = k;
    f.state = FlowState::opening;
    uint8_t &count = present_[presence(sig)];
    if (count < kPresenceStuck) ++count;
    f.last_ns = now_ns;
    ++size_;
    ++stats_.opened;
    return &f;
}

void ProxyFlows::close(ProxyFlow *f) {
    if (f->state == FlowState::free) return;
    remove(f);
    ++stats_.closed;
}

void ProxyFlows::remove(ProxyFlow *f) {
    if (f->state == FlowState::free) return;
    f->state = FlowState::free;
    f->held_count = 0;
    const hash_sig_t sig = hash(f->key);
    uint8_t &count = present_[presence(sig)];
    if (count < kPresenceStuck) --count;
    if (rte_hash_del_key_with_hash(hash_, &f->key, sig) >= 0) --size_;
}

}  // namespace floodgate
