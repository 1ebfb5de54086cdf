#include "sim/core/huge_pages.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>

namespace kvtier {
namespace {

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
