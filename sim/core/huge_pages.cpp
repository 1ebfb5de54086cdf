#include "sim/core/huge_pages.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <mutex>
#include <new>
#include <vector>

namespace kvtier {
namespace {

size_t round_up_to_huge_page(size_t bytes) {
  return (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
}

// Blocks given back, kept for the next allocations: a growing table's old copy becomes the next
// chunks of the forest's node array instead of going back to the kernel, which would clear fresh
// pages for those chunks all over again.
struct FreeBlock {
  uintptr_t start;
  size_t length;
};

constexpr size_t kMaxKeptBytes = size_t{1} << 30;

std::mutex free_mutex;
std::vector<FreeBlock> free_blocks;  // by start; adjacent blocks merged
size_t kept_bytes = 0;

// A kept block of at least `length` bytes (the smallest that fits), or 0.
uintptr_t take_kept(size_t length) {
  std::lock_guard<std::mutex> lock(free_mutex);
  auto best = free_blocks.end();
  for (auto it = free_blocks.begin(); it != free_blocks.end(); ++it) {
    if (it->length >= length && (best == free_blocks.end() || it->length < best->length)) best = it;
  }
  if (best == free_blocks.end()) return 0;
  uintptr_t start = best->start;
  best->start += length;
  best->length -= length;
  if (best->length == 0) free_blocks.erase(best);
  kept_bytes -= length;
  return start;
}

// Keeps [start, start + length) unless that would keep too much; returns whether it did.
bool keep(uintptr_t start, size_t length) {
  std::lock_guard<std::mutex> lock(free_mutex);
  if (kept_bytes + length > kMaxKeptBytes) return false;
  auto next = std::lower_bound(free_blocks.begin(), free_blocks.end(), start,
                               [](const FreeBlock& b, uintptr_t s) { return b.start < s; });
  auto it = free_blocks.insert(next, {start, length});
  if (it + 1 != free_blocks.end() && it->start + it->length == (it + 1)->start) {
    it->length += (it + 1)->length;
    free_blocks.erase(it + 1);
  }
  if (it != free_blocks.begin() && (it - 1)->start + (it - 1)->length == it->start) {
    (it - 1)->length += it->length;
    free_blocks.erase(it);
  }
  kept_bytes += length;
  return true;
}

}  // namespace

void* allocate_huge_pages(size_t bytes) {
  // Rounding up and the extra huge page below cannot overflow for any smaller size.
  if (bytes > std::numeric_limits<size_t>::max() / 2) throw std::bad_alloc();
  size_t length = round_up_to_huge_page(bytes);
  if (uintptr_t kept = take_kept(length)) return reinterpret_cast<void*>(kept);
  // mmap aligns to 4 KiB only: map one huge page more and unmap the unaligned ends.
  size_t mapped = length + kHugePageBytes;
  void* memory = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) throw std::bad_alloc();
  auto start = reinterpret_cast<uintptr_t>(memory);
  uintptr_t aligned = round_up_to_huge_page(start);
  if (aligned > start) munmap(memory, aligned - start);
  uintptr_t tail = aligned + length;
  if (start + mapped > tail) munmap(reinterpret_cast<void*>(tail), start + mapped - tail);
  // Advice only: without huge pages (turned off, or an old kernel) the mapping works all the same.
  madvise(reinterpret_cast<void*>(aligned), length, MADV_HUGEPAGE);
  return reinterpret_cast<void*>(aligned);
}

void free_huge_pages(void* memory, size_t bytes) {
  size_t length = round_up_to_huge_page(bytes);
  if (!keep(reinterpret_cast<uintptr_t>(memory), length)) munmap(memory, length);
}

void release_kept_huge_pages() {
  std::vector<FreeBlock> blocks;
  {
    std::lock_guard<std::mutex> lock(free_mutex);
    blocks.swap(free_blocks);
    kept_bytes = 0;
  }
  for (const FreeBlock& b : blocks) munmap(reinterpret_cast<void*>(b.start), b.length);
}

}  // namespace kvtier
