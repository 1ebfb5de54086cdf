#include "hw/store/slot_allocator.h"

#include <gtest/gtest.h>

namespace kvtier::hw {
namespace {

TEST(SlotAllocator, FreshPoolHandsOutOneContiguousRun) {
  SlotAllocator slots(10);
  const auto batch = slots.allocate(4);
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(*batch, (std::vector<uint64_t>{0, 1, 2, 3}));
  EXPECT_EQ(slots.free_count(), 6u);
}

TEST(SlotAllocator, RefusesWithoutTakingAnythingWhenTooFewAreFree) {
  SlotAllocator slots(3);
  ASSERT_TRUE(slots.allocate(2));
  EXPECT_FALSE(slots.allocate(2).has_value());
  EXPECT_EQ(slots.free_count(), 1u);
}

TEST(SlotAllocator, ReusesTheLowestReleasedSlotsFirst) {
  SlotAllocator slots(8);
  ASSERT_TRUE(slots.allocate(8));
  const std::vector<uint64_t> holes = {6, 2, 5};
  slots.release(holes);
  EXPECT_EQ(*slots.allocate(3), (std::vector<uint64_t>{2, 5, 6}));
}

TEST(ConsecutiveRuns, SplitsAtGapsAndAtTheLengthLimit) {
  const std::vector<uint64_t> sorted = {3, 4, 5, 9, 10, 11, 12, 20};
  EXPECT_EQ(consecutive_runs(sorted, 100), (std::vector<SlotRun>{{3, 3}, {9, 4}, {20, 1}}));
  EXPECT_EQ(consecutive_runs(sorted, 2), (std::vector<SlotRun>{{3, 2}, {5, 1}, {9, 2}, {11, 2}, {20, 1}}));
}

}  // namespace
}  // namespace kvtier::hw
