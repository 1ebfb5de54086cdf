#include "hw/store/block_pattern.h"

#include <algorithm>
#include <cstring>

#include "hw/kernels/quant_math.h"
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

// Bytes [offset, offset + 8) of the block's pattern, fewer at the end of the page.
uint64_t bytes_word(uint64_t block, size_t offset) {
  return pattern_word(block, offset / 8);
}

// Four bf16 values of the int4-exact pattern: value i of a run of 16 is (7 i + the run's shift) mod 16,
// which takes every value from 0 to 15 once as i does.
uint64_t int4_exact_word(uint64_t block, size_t offset) {
  const size_t first = offset / 2;
  const uint64_t shift = pattern_word(block, first / 16);
  uint64_t word = 0;
  for (size_t i = 0; i < 4; ++i) {
    const auto value = static_cast<float>((7 * ((first + i) % 16) + shift) % 16);
    word |= static_cast<uint64_t>(float_to_bf16(value)) << (16 * i);
  }
  return word;
}

uint64_t word_at(uint64_t block, size_t offset, PatternKind kind) {
  return kind == PatternKind::kBytes ? bytes_word(block, offset) : int4_exact_word(block, offset);
}

}  // namespace

void fill_block_pattern(uint64_t block, std::span<std::byte> bytes, PatternKind kind) {
  for (size_t offset = 0; offset < bytes.size(); offset += 8) {
    const uint64_t word = word_at(block, offset, kind);
    std::memcpy(bytes.data() + offset, &word, std::min<size_t>(8, bytes.size() - offset));
  }
}

bool has_block_pattern(uint64_t block, std::span<const std::byte> bytes, PatternKind kind) {
  for (size_t offset = 0; offset < bytes.size(); offset += 8) {
    const uint64_t word = word_at(block, offset, kind);
    if (std::memcmp(bytes.data() + offset, &word, std::min<size_t>(8, bytes.size() - offset)) != 0)
      return false;
  }
  return true;
}

DevicePatterns::DevicePatterns(DevicePages& device, int64_t batch_pages, PatternKind kind)
    : device_(device),
      batch_pages_(batch_pages),
      kind_(kind),
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
    for (size_t i = 0; i < count; ++i) fill_block_pattern(blocks[start + i], staged(static_cast<int64_t>(i)), kind_);
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
      if (!has_block_pattern(blocks[start + i], staged(static_cast<int64_t>(i)), kind_))
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
