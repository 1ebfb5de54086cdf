#include "hw/store/block_pattern.h"

#include <algorithm>
#include <cstring>

#include "hw/store/store_error.h"

namespace kvtier::hw {
namespace {

uint64_t mix(uint64_t x) {  // splitmix64's finalizer
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

uint64_t pattern_word(uint64_t block, uint64_t index) {
  return mix(block * 0x9E3779B97F4A7C15ull + index);
}

}  // namespace

void fill_block_pattern(uint64_t block, std::span<std::byte> bytes) {
  for (size_t offset = 0, index = 0; offset < bytes.size(); offset += 8, ++index) {
    const uint64_t word = pattern_word(block, index);
    std::memcpy(bytes.data() + offset, &word, std::min<size_t>(8, bytes.size() - offset));
  }
}

bool has_block_pattern(uint64_t block, std::span<const std::byte> bytes) {
  for (size_t offset = 0, index = 0; offset < bytes.size(); offset += 8, ++index) {
    const uint64_t word = pattern_word(block, index);
    if (std::memcmp(bytes.data() + offset, &word, std::min<size_t>(8, bytes.size() - offset)) != 0)
      return false;
  }
  return true;
}

DevicePatterns::DevicePatterns(DevicePages& device, int64_t batch_pages)
    : device_(device),
      batch_pages_(batch_pages),
      staging_(device.allocate_host(static_cast<uint64_t>(std::max<int64_t>(batch_pages, 1)) *
                                    device.host_pitch())) {
  if (batch_pages < 1) throw StoreError(StoreErrc::kBadRequest, "DevicePatterns needs batch_pages >= 1");
}

std::span<std::byte> DevicePatterns::staged(int64_t i) const {
  return {staging_.data() + static_cast<uint64_t>(i) * device_.host_pitch(), device_.page_bytes()};
}

std::vector<std::byte*> DevicePatterns::staging_pages(size_t count) const {
  std::vector<std::byte*> pages;
  for (size_t i = 0; i < count; ++i) pages.push_back(staged(static_cast<int64_t>(i)).data());
  return pages;
}

void DevicePatterns::write(std::span<const int64_t> pages, std::span<const uint64_t> blocks) {
  for (size_t start = 0; start < pages.size(); start += static_cast<size_t>(batch_pages_)) {
    const size_t count = std::min(pages.size() - start, static_cast<size_t>(batch_pages_));
    for (size_t i = 0; i < count; ++i) fill_block_pattern(blocks[start + i], staged(static_cast<int64_t>(i)));
    device_.reload(pages.subspan(start, count), staging_pages(count));
    device_.synchronize();
  }
}

std::vector<uint64_t> DevicePatterns::mismatches(std::span<const int64_t> pages,
                                                 std::span<const uint64_t> blocks) {
  std::vector<uint64_t> wrong;
  for (size_t start = 0; start < pages.size(); start += static_cast<size_t>(batch_pages_)) {
    const size_t count = std::min(pages.size() - start, static_cast<size_t>(batch_pages_));
    device_.offload(pages.subspan(start, count), staging_pages(count));
    device_.synchronize();
    for (size_t i = 0; i < count; ++i) {
      if (!has_block_pattern(blocks[start + i], staged(static_cast<int64_t>(i))))
        wrong.push_back(blocks[start + i]);
    }
  }
  return wrong;
}

std::vector<uint64_t> fill_placed_and_check(DevicePatterns& patterns, const StoreAdmission& admission,
                                            std::span<const uint64_t> chain) {
  std::vector<int64_t> placed_pages;
  std::vector<uint64_t> placed_blocks;
  for (size_t i = 0; i < chain.size(); ++i) {
    if (admission.source_tier[i] >= 0) continue;
    placed_pages.push_back(admission.hbm_pages[i]);
    placed_blocks.push_back(chain[i]);
  }
  patterns.write(placed_pages, placed_blocks);
  return patterns.mismatches(admission.hbm_pages, chain);
}

}  // namespace kvtier::hw
