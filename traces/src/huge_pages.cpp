#include "huge_pages.h"

#include <sys/mman.h>

#include <cstdint>
#include <limits>
#include <new>

namespace kvtier {
namespace {

size_t round_up_to_huge_page(size_t bytes) {
  return (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
}

}  // namespace

void* allocate_huge_pages(size_t bytes) {
  // Rounding up and the extra huge page below cannot overflow for any smaller size.
  if (bytes > std::numeric_limits<size_t>::max() / 2) throw std::bad_alloc();
  size_t length = round_up_to_huge_page(bytes);
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
  munmap(memory, round_up_to_huge_page(bytes));
}

}  // namespace kvtier
