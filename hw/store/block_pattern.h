// Bytes that depend on a block id alone, to follow a block's data through the tiers.
//
// The tests and `kvtier-hw replay --verify` write a placed block's pattern into its HBM page (standing in
// for the KV prefill would compute) and expect exactly those bytes back wherever the block travels. Every
// 8-byte word differs (a hash of the block id and the word's index), so a page swapped with another,
// shifted, or torn at any offset is caught.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "hw/store/device_pages.h"
#include "hw/store/tiered_store.h"

namespace kvtier::hw {

void fill_block_pattern(uint64_t block, std::span<std::byte> bytes);
bool has_block_pattern(uint64_t block, std::span<const std::byte> bytes);

// Writes and checks patterns in device pages through host staging pages, up to `batch_pages` per copy.
class DevicePatterns {
 public:
  DevicePatterns(DevicePages& device, int64_t batch_pages);

  void write(std::span<const int64_t> pages, std::span<const uint64_t> blocks);
  // The blocks whose page does not hold their pattern.
  std::vector<uint64_t> mismatches(std::span<const int64_t> pages, std::span<const uint64_t> blocks);

 private:
  std::span<std::byte> staged(int64_t i) const;
  std::vector<std::byte*> staging_pages(size_t count) const;

  DevicePages& device_;
  int64_t batch_pages_;
  MemoryRegion staging_;
};

// Stands in for prefill: writes the pattern of every block `admission` placed into its HBM page. Then
// returns the blocks of the request (`chain`) whose HBM page does not hold their pattern.
std::vector<uint64_t> fill_placed_and_check(DevicePatterns& patterns, const StoreAdmission& admission,
                                            std::span<const uint64_t> chain);

}  // namespace kvtier::hw
