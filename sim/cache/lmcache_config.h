// An LMCache configuration file (the YAML that LMCACHE_CONFIG_FILE names for vLLM's LMCache connector)
// read as a tier file: vLLM's GPU prefix cache and the LMCache backends below it as kvtier's tiers.
//
// LMCache v1 keeps a request's KV chunks in its backends in a fixed order: the local CPU buffer
// (local_cpu, max_local_cpu_size), the local disk (local_disk, max_local_disk_size), a remote store
// (remote_url). A store puts every chunk into every backend (StorageManager.batched_put); a lookup takes
// each chunk from the first backend that has it, and a chunk found on disk or remotely is also put back into
// the CPU buffer; each backend evicts by cache_policy (LRU by default), and an evicted chunk is dropped, not
// moved. In kvtier's words: HBM (tier 0, described by extra_config.kvtier_hbm, since the file says nothing
// about vLLM's GPU cache), then dram, nvme and remote tiers, each inclusive and written through, in HBM's
// KV layout (LMCache's naive serde stores vLLM's KV bytes unchanged), chunk_size tokens per block, and a
// chunk's last block the most recent in its LRU order (LMCache puts and reads a request's chunks in order).
// Sizes are LMCache's GB, 2^30 bytes (it allocates int(size * 1024**3) bytes).
//
// Every key is accounted for: modelled, ignored because it changes nothing kvtier models (timing, ports,
// management), or refused with the reason (docs/config-reference.md lists them all).
#pragma once

#include <cstdint>

#include "sim/cache/tier_spec.h"
#include "sim/core/config.h"
#include "sim/core/model_card.h"

namespace kvtier {

// Whether `root` holds LMCache configuration keys (and so, without a `tiers` key, is an LMCache file).
bool is_lmcache_config(const ConfigNode& root);

// The file's chunk_size, 1 to 1,048,576 tokens, or LMCache's default 256 when absent. Throws ConfigError.
int64_t lmcache_chunk_tokens(const ConfigNode& root);

// The tiers the file describes, in blocks of `block_tokens`, which must be its chunk_size. Throws
// ConfigError located at the key kvtier cannot model, with the reason.
FileTiers parse_lmcache_tiers(const ConfigNode& root, const ModelCard& model, int64_t block_tokens);

}  // namespace kvtier
