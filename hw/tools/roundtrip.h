// The byte-exact round trip of KV pages through every tier: HBM -> DRAM -> NVMe -> DRAM -> HBM.
//
// Pages of a real layout (one HBM pool per layer group: bf16 boundary layers, packed-uint8 4-bit body)
// are filled with seeded random bytes, plus planted pages of 0xFF and of bf16 NaN / -0 patterns; they
// are offloaded in shuffled order into pinned host pages, written to the NVMe store, the host pages are
// poisoned, read back from NVMe into host pages in reverse order, reloaded into different HBM pages,
// and every byte of every group is compared with the original.
#pragma once

#include <cstdint>
#include <string>

namespace kvtier::hw {

struct RoundtripOptions {
  std::string model = "minimax-m2.5";
  std::string kv = "turboquant4";
  int64_t block_tokens = 16;
  int64_t pages = 128;
  std::string directory = ".";  // where the NVMe store's file goes
  uint64_t seed = 1;
};

struct RoundtripReport {
  std::string layout;
  int groups = 0;
  int64_t pages = 0;
  int64_t page_bytes = 0;  // all groups of one page
  int64_t mismatched_pages = 0;
  double offload_seconds = 0;
  double nvme_write_seconds = 0;
  double nvme_read_seconds = 0;
  double reload_seconds = 0;
  uint64_t bytes() const { return static_cast<uint64_t>(pages * page_bytes); }
};

// Throws ConfigError for an unknown model or layout, StoreError / GpuError when a tier fails.
RoundtripReport run_roundtrip(const RoundtripOptions& options);

}  // namespace kvtier::hw
