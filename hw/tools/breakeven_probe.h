// kvtier-hw breakeven's measurement: for a prefix of L cached tokens and s new ones, what a miss and a hit
// cost on the real pieces, so that `kvtier breakeven --compare` can hold the cost model's crossover to them.
//
//   miss  a prefill of L + s tokens in one step, over pages the tiered store placed (the prefill writes
//         their KV, as a serving engine's does): `kvtier breakeven` prices prefill(L + s) as one step.
//   hit   the prefix's blocks sit in the store's lower tier only (the miss's blocks, released and evicted
//         from HBM); admit() promotes them (the store's own timed copies: DRAM -> HBM, or NVMe -> staging
//         page -> HBM), then a prefill of s tokens after the L cached ones. load = admit()'s wall time.
//
// Every repeat uses fresh block ids, so nothing is cached from an earlier one, and leaves HBM empty, so no
// admit pays for evictions. The store and the prefill are abstract here (DevicePages, Prefill): the GPU
// command (cmd_breakeven.cpp) runs them on TransformerForward and GpuDevicePages; the tests on host memory.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "hw/store/tiered_store.h"

namespace kvtier::hw {

// The prefix lengths of a geometric sweep from `first` to `last` tokens: `first` rounded up to whole
// blocks, then each length the largest whole number of blocks at most `ratio` times the one before (at
// least one block more), and `last` rounded down to whole blocks as the final length. Adjacent lengths are
// thus never more than `ratio` apart. Throws ConfigError unless 1 < ratio and first <= last.
std::vector<int64_t> sweep_lengths(int64_t first, int64_t last, double ratio, int64_t block_tokens);
// "1K:64K:1.25" -> sweep_lengths(1024, 65536, 1.25, block_tokens). Throws ConfigError naming --sweep.
std::vector<int64_t> parse_sweep(const std::string& text, int64_t block_tokens);
// "1K,4K,16K" -> each rounded down to whole blocks, in increasing order without repeats. Throws ConfigError
// naming --contexts for a length under one block.
std::vector<int64_t> parse_contexts(const std::string& text, int64_t block_tokens);

// A prefill as the engine runs it: `new_tokens` after `cached_tokens` positions, the sequence's KV in
// `pages` (one per block, covering every position). Returns its wall time, the device idle again.
class Prefill {
 public:
  virtual ~Prefill() = default;
  virtual double run(int64_t cached_tokens, int64_t new_tokens, std::span<const int64_t> pages) = 0;
};

struct BreakevenSample {
  double load_s = 0;  // admit(): promoting the prefix from the lower tier
  double hit_s = 0;   // load_s + the prefill of the new tokens after the prefix
  double miss_s = 0;  // the prefill of prefix and new tokens together
};

// One (layout, path) series on a store of two tiers: HBM, and the path's tier below it. REQUIRES: HBM's
// capacity and the lower tier's each hold a prefix of the longest length measured plus the new tokens;
// nothing else uses the store.
class BreakevenProbe {
 public:
  BreakevenProbe(TieredStore& store, Prefill& prefill, int64_t block_tokens, int64_t new_tokens);

  // One repeat at `prefix_tokens` (a whole number of blocks). Throws std::logic_error when the store does
  // not serve the hit from its lower tier, StoreError when a copy fails.
  BreakevenSample measure(int64_t prefix_tokens);

 private:
  std::vector<uint64_t> fresh_blocks(int64_t count);
  StoreAdmission admit(std::span<const uint64_t> chain);
  void evict_hbm();

  TieredStore& store_;
  Prefill& prefill_;
  int64_t block_tokens_;
  int64_t new_tokens_;
  int64_t hbm_capacity_bytes_;
  uint64_t next_block_ = 1;
};

// The median of each field over the samples. REQUIRES: samples not empty.
BreakevenSample median_sample(std::vector<BreakevenSample> samples);

// One measured point of the file kvtier-hw breakeven writes.
struct SweepPoint {
  std::string kv;    // the lower tier's layout as --kv gave it
  std::string path;  // "dram" or "nvme" (medium_name)
  int64_t prefix_tokens = 0;
  std::vector<BreakevenSample> samples;
};

struct SweepRecord {
  std::string command, device;
  std::string model;  // as --model gave it: a built-in card's name or a file, for kvtier breakeven --compare
  std::string hbm_kv = "bf16";  // HBM's layout: the forward pass reads bf16
  int64_t block_tokens = 0;
  int64_t new_tokens = 0;
  std::vector<SweepPoint> points;
};

// The file: {tool, command, device, model, hbm_kv, block_tokens, new_tokens, prefill: "one step", points:
// [{kv, path, prefix_tokens, load_s, hit_s, miss_s (medians), samples: [{load_s, hit_s, miss_s}]}]}.
nlohmann::json sweep_json(const SweepRecord& record);

}  // namespace kvtier::hw
