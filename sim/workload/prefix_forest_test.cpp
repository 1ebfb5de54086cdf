#include "sim/workload/prefix_forest.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <unordered_map>
#include <vector>

namespace kvtier {
namespace {

TEST(IdIndex, AgreesWithAStandardMapThroughGrowth) {
  // 300,000 ids take the table from 64K slots through several doublings, past the 2 MiB from which
  // its memory comes from allocate_huge_pages. Small consecutive ids (Mooncake) and random ones.
  IdIndex index;
  std::unordered_map<uint64_t, uint32_t> reference;
  std::mt19937_64 rng(7);
  for (uint32_t i = 0; i < 300000; ++i) {
    uint64_t id = i % 2 == 0 ? i / 2 : rng();
    index.prefetch(id);
    EXPECT_EQ(index.insert(id, i), reference.try_emplace(id, i).first->second);
  }
  EXPECT_EQ(index.size(), reference.size());
  for (const auto& [id, value] : reference) ASSERT_EQ(index.find(id), value) << id;
  EXPECT_EQ(index.insert(0, 12345), 0u);  // present: keeps its value
  EXPECT_EQ(index.find(uint64_t{1} << 40), IdIndex::kAbsent);
}

TEST(ChunkedIds, AppendsAcrossChunkBoundaries) {
  // Runs of 1,000 ids do not divide the 2^18-id chunks: some runs span two chunks.
  ChunkedIds ids;
  std::vector<uint64_t> run(1000);
  for (uint64_t start = 0; start < 2'500'000; start += run.size()) {
    for (size_t i = 0; i < run.size(); ++i) run[i] = (start + i) * 3;
    ids.append(run.data(), run.data() + run.size());
  }
  ASSERT_EQ(ids.size(), 2'500'000u);
  for (size_t i = 0; i < ids.size(); ++i) ASSERT_EQ(ids[i], i * 3) << i;
}

// Freed huge-page blocks are kept and handed out again: random allocations and frees of 2-8 MiB,
// each block's pages marked with its own nonzero byte, must never overlap a live block (every live
// block's marks are intact at its free), and freed memory must be taken again (it still holds a
// mark) rather than mapped anew (the kernel's fresh pages are zero).
TEST(HugePages, KeptBlocksAreReusedAndNeverOverlapLiveOnes) {
  release_kept_huge_pages();
  std::mt19937_64 rng(3);
  struct Live {
    size_t bytes;
    unsigned char mark;
  };
  std::map<unsigned char*, Live> live;
  int reused = 0, allocations = 0;
  for (int step = 0; step < 300; ++step) {
    if (live.empty() || (live.size() < 16 && rng() % 2 == 0)) {
      size_t bytes = kHugePageBytes * (1 + rng() % 4) - rng() % 1000;
      auto* memory = static_cast<unsigned char*>(allocate_huge_pages(bytes));
      ASSERT_EQ(reinterpret_cast<uintptr_t>(memory) % kHugePageBytes, 0u);
      ++allocations;
      reused += memory[0] != 0;
      for (const auto& [start, block] : live) {
        ASSERT_TRUE(memory + bytes <= start || start + block.bytes <= memory) << "overlap at step " << step;
      }
      auto mark = static_cast<unsigned char>(1 + step % 255);
      for (size_t i = 0; i < bytes; i += 4096) memory[i] = mark;  // a byte a page: quick, and enough
      memory[bytes - 1] = mark;
      live[memory] = {bytes, mark};
    } else {
      auto it = live.begin();
      std::advance(it, static_cast<long>(rng() % live.size()));
      for (size_t i = 0; i < it->second.bytes; i += 4096) ASSERT_EQ(it->first[i], it->second.mark) << step;
      ASSERT_EQ(it->first[it->second.bytes - 1], it->second.mark) << step;
      free_huge_pages(it->first, it->second.bytes);
      live.erase(it);
    }
  }
  for (const auto& [start, block] : live) free_huge_pages(start, block.bytes);
  release_kept_huge_pages();
  EXPECT_GT(reused, allocations / 2);
}

}  // namespace
}  // namespace kvtier
