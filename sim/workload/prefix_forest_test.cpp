#include "sim/workload/prefix_forest.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <unordered_map>
#include <vector>

namespace kvtier {
namespace {

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
}  // namespace
}  // namespace kvtier
