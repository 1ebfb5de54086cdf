// Memory for large tables on transparent huge pages: trace statistics' prefix forest
// (sim/workload/prefix_forest.h), the id indexes (id_index.h) and the tiered cache's block array.
//
// The forest's lookups land at random places in tables of tens of megabytes. With 4 KiB pages nearly
// every lookup also missed the TLB, and the first touch of every page faulted (on the development VM a
// 4 KiB fault costs about 12 us, so the faults alone were a sixth of the 1M-request benchmark). Huge
// pages took that benchmark from about 4.4 s to 3.1 s. Blocks of 2 MiB and more are therefore mapped on
// their own, aligned to 2 MiB and marked MADV_HUGEPAGE, which the default kernel setting
// (transparent_hugepage=madvise) honours; with huge pages off they are plain mappings.
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <type_traits>
#include <vector>

namespace kvtier {

inline constexpr size_t kHugePageBytes = size_t{2} << 20;

// cover_slot's growth, out of line: inlined, its registers and calls made every caller's common path (the
// index already covered) save and restore registers it does not need.
template <typename T, typename Allocator>
[[gnu::noinline, gnu::cold]] void grow_to_cover(std::vector<T, Allocator>& array, size_t index, T fill) {
  constexpr size_t kPerPage = std::max<size_t>(1, 4096 / sizeof(T));
  array.resize((index / kPerPage + 1) * kPerPage, fill);
}

// Makes `index` an index of an array indexed by dense ids or slots, new entries set to `fill`. It grows to
// the end of the 4 KiB page that holds `index`, so no page past the highest index seen is touched (past
// its capacity the vector still grows geometrically). Growing to twice the size touched up to twice the
// pages: on the Mooncake sample a tenth of the simulation's page faults.
template <typename T, typename Allocator>
void cover_slot(std::vector<T, Allocator>& array, size_t index, std::type_identity_t<T> fill) {
  if (index >= array.size()) [[unlikely]]
    grow_to_cover(array, index, fill);
}

// Memory of at least `bytes`, aligned to kHugePageBytes, not initialised; throws std::bad_alloc.
void* allocate_huge_pages(size_t bytes);
// REQUIRES: `memory` came from allocate_huge_pages(bytes).
// Keeps the memory (up to 1 GiB in all) for the next allocations rather than unmapping it: a fresh
// page costs a fault and the kernel's clearing, a kept one neither.
void free_huge_pages(void* memory, size_t bytes);
// Unmaps what free_huge_pages kept, for when the large tables are gone.
void release_kept_huge_pages();

// A standard allocator that takes blocks of kHugePageBytes or more from allocate_huge_pages and
// smaller ones from std::allocator.
template <typename T>
struct HugePageAllocator {
  using value_type = T;

  HugePageAllocator() = default;
  template <typename U>
  HugePageAllocator(const HugePageAllocator<U>&) {}

  T* allocate(size_t n) {
    if (n * sizeof(T) < kHugePageBytes) return std::allocator<T>().allocate(n);
    return static_cast<T*>(allocate_huge_pages(n * sizeof(T)));
  }
  void deallocate(T* memory, size_t n) {
    if (n * sizeof(T) < kHugePageBytes) {
      std::allocator<T>().deallocate(memory, n);
    } else {
      free_huge_pages(memory, n * sizeof(T));
    }
  }

  friend bool operator==(const HugePageAllocator&, const HugePageAllocator&) { return true; }
};

}  // namespace kvtier
