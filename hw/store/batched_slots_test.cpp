#include "hw/store/batched_slots.h"

#include <gtest/gtest.h>

namespace kvtier::hw {
namespace {

TEST(BatchedSlots, ReleasedSlotsWaitForTheBatchToCommit) {
  BatchedSlots slots(2);
  const uint64_t a = *slots.allocate();
  const uint64_t b = *slots.allocate();
  slots.commit();
  slots.release_after_batch(a);
  EXPECT_FALSE(slots.allocate()) << "a slot released in this batch may still be read by it";
  slots.commit();
  EXPECT_EQ(slots.allocate(), a);
  EXPECT_NE(a, b);
}

TEST(BatchedSlots, RollbackFreesTheBatchsAllocationsAndKeepsItsReleasesTaken) {
  BatchedSlots slots(3);
  const uint64_t kept = *slots.allocate();
  slots.commit();
  slots.release_after_batch(kept);
  const uint64_t fresh = *slots.allocate();
  slots.release_after_batch(fresh);  // allocated and released again within the batch
  const uint64_t other = *slots.allocate();
  slots.rollback();
  EXPECT_EQ(slots.allocate(), fresh);
  EXPECT_EQ(slots.allocate(), other);
  EXPECT_FALSE(slots.allocate()) << "the slot released by the undone batch is still taken";
}

}  // namespace
}  // namespace kvtier::hw
