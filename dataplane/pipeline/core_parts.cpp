#include "dataplane/pipeline/core_parts.h"

namespace floodgate {

CoreSizes core_sizes(const Config &config, bool with_proxy_table) {
    CoreSizes s;
    s.table_entries = config.table_entries_per_core;
    if (with_proxy_table)
        s.proxy_connections = static_cast<uint32_t>(config.proxy_connections_per_core);
    s.proxy_server_timeout_ns = config.proxy_server_timeout_ns;
    s.proxy_idle_timeout_ns = config.proxy_idle_timeout_ns;
    return s;
}

CoreParts::CoreParts(const RuleSet *rules, const CoreSizes &sizes, const CoreSeeds &seeds,
                     const CoreMemory &memory, unsigned core) {
    table_ = std::make_unique<LimitTable>(sizes.table_entries, seeds.table, memory.table);
    if (!table_->ok()) {
        missing_ = Missing::limit_table;
        return;
    }
    pipeline_ = std::make_unique<Pipeline>(rules, table_.get(), core);
    pipeline_->set_cookie_key(seeds.cookie);
    pipeline_->seed_top_samples(seeds.table.k[2] ^ (0x9e3779b97f4a7c15ull * (core + 1)));
    if (sizes.proxy_connections == 0) return;
    proxy_flows_ =
        std::make_unique<ProxyFlows>(sizes.proxy_connections, sizes.proxy_server_timeout_ns,
                                     sizes.proxy_idle_timeout_ns, seeds.proxy, memory.socket);
    if (!proxy_flows_->ok()) {
        missing_ = Missing::proxy_table;
        return;
    }
    pipeline_->enable_syn_proxy(proxy_flows_.get());
}

}  // namespace floodgate
