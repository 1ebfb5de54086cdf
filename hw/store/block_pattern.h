// Bytes that depend on a block id alone, to follow a block's data through the tiers.
//
// The tests and `kvtier-hw replay --verify` write a placed block's pattern into its HBM page (standing in
// for the KV prefill would compute) and expect exactly those bytes back wherever the block travels. Every
// 8-byte word differs (a hash of the block id and the word's index), so a page swapped with another,
// shifted, or torn at any offset is caught.
//
// A store whose lower tiers are int4 (page_packing.h) gives a page back only as exactly as int4 holds it,
// so its tests write the int4-exact pattern instead: bf16 values 0 to 15, each aligned run of 16 values
// holding every one of them once, in an order that depends on the block and the run. A group of 16 or more
// values then has minimum 0 and maximum 15 (scale 1, zero 0), and quantizing and dequantizing gives every
// value back bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "hw/store/device_pages.h"
#include "hw/store/tiered_store.h"

namespace kvtier::hw {

enum class PatternKind { kBytes, kInt4Exact };

void fill_block_pattern(uint64_t block, std::span<std::byte> bytes, PatternKind kind = PatternKind::kBytes);
bool has_block_pattern(uint64_t block, std::span<const std::byte> bytes, PatternKind kind = PatternKind::kBytes);

// Writes and checks patterns in device pages through host staging pages, up to `batch_pages` per copy.
class DevicePatterns {
 public:
  DevicePatterns(DevicePages& device, int64_t batch_pages, PatternKind kind = PatternKind::kBytes);

  void write(std::span<const int64_t> pages, std::span<const uint64_t> blocks);
  // The blocks whose page does not hold their pattern.
  std::vector<uint64_t> mismatches(std::span<const int64_t> pages, std::span<const uint64_t> blocks);

 private:
  std::span<std::byte> staged(int64_t i) const;
  std::vector<std::byte*> staging_pages(size_t count) const;

  DevicePages& device_;
  int64_t batch_pages_;
  PatternKind kind_;
  MemoryRegion staging_;
};

// Stands in for prefill: writes the pattern of every block `admission` placed into its HBM page. Then
// returns the blocks of the request (`chain`) whose HBM page does not hold their pattern.
std::vector<uint64_t> fill_placed_and_check(DevicePatterns& patterns, const StoreAdmission& admission,
                                            std::span<const uint64_t> chain);

}  // namespace kvtier::hw
