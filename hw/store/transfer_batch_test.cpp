#include "hw/store/transfer_batch.h"

#include <gtest/gtest.h>

#include "hw/store/host_memory_pages.h"

namespace kvtier::hw {
namespace {

std::byte* host_page(int i) {
  static std::byte pages[8][64];
  return pages[i];
}

SlotAccess host_read(int page, TransferPath path) {
  return {SlotSpace::kHost, reinterpret_cast<uintptr_t>(host_page(page)), static_cast<int>(path), false};
}
SlotAccess hbm_read(int64_t page) {
  return {SlotSpace::kHbm, static_cast<uint64_t>(page), static_cast<int>(TransferPath::kOffload), false};
}

TEST(TransferBatch, AReadMayFollowAWriteThatRunsInAnEarlierPath) {
  TransferBatch batch;
  batch.add({.path = TransferPath::kOffload, .key = 1, .hbm_page = 3, .host = host_page(0)});
  // Offloaded, then written to NVMe from the same host page: the put path runs after the offload path.
  EXPECT_FALSE(batch.conflicts(host_read(0, TransferPath::kNvmePut)));
  // Offloaded, then copied down from the same HBM page again: both only read it.
  EXPECT_FALSE(batch.conflicts(hbm_read(3)));
}

TEST(TransferBatch, AReadOfSomethingALaterPathWritesMustWait) {
  TransferBatch batch;
  batch.add({.path = TransferPath::kReload, .key = 1, .hbm_page = 5, .host = host_page(1)});
  // Reloaded into HBM page 5, then offloaded from it: the offload path would run first and read stale bytes.
  EXPECT_TRUE(batch.conflicts(hbm_read(5)));
  EXPECT_FALSE(batch.conflicts(hbm_read(6)));
}

TEST(TransferBatch, AWriteOfSomethingTheBatchStillReadsMustWait) {
  TransferBatch batch;
  batch.add({.path = TransferPath::kNvmePut, .key = 7, .host = host_page(2)});
  const SlotAccess overwrite_page{SlotSpace::kHost, reinterpret_cast<uintptr_t>(host_page(2)),
                                  static_cast<int>(TransferPath::kOffload), true};
  EXPECT_TRUE(batch.conflicts(overwrite_page));
  const SlotAccess second_put{SlotSpace::kNvme, 7, static_cast<int>(TransferPath::kNvmePut), true};
  EXPECT_TRUE(batch.conflicts(second_put));
}

TEST(TransferBatch, KeysAreErasedAfterEveryCopy) {
  TransferBatch batch;
  batch.add({.path = TransferPath::kNvmeGet, .key = 9, .host = host_page(3)});
  batch.erase_after(9);  // read, then moved out of an exclusive tier: the get runs before the erase
  // Erased, then read or written again: the erase would run last, so these wait for the batch.
  EXPECT_TRUE(batch.conflicts({SlotSpace::kNvme, 9, static_cast<int>(TransferPath::kNvmeGet), false}));
  EXPECT_TRUE(batch.conflicts({SlotSpace::kNvme, 9, static_cast<int>(TransferPath::kNvmePut), true}));
  EXPECT_FALSE(batch.conflicts({SlotSpace::kNvme, 10, static_cast<int>(TransferPath::kNvmePut), true}));
}

TEST(TransferBatch, RunsPathsInOrderSoChainsWithinABatchComeOutRight) {
  HostMemoryPages device(4, 64);
  std::byte* staging = host_page(4);
  std::byte* destination = host_page(5);
  for (int i = 0; i < 64; ++i) staging[i] = static_cast<std::byte>(i);
  device.reload(std::vector<int64_t>{0}, std::vector<std::byte*>{staging});
  TransferBatch batch;
  // Added in the opposite order of the paths: offload page 0, copy that host page on, reload into page 1.
  batch.add({.path = TransferPath::kReload, .key = 1, .hbm_page = 1, .host = destination});
  batch.add(
      {.path = TransferPath::kHostCopy, .key = 1, .host = host_page(6), .host_destination = destination});
  batch.add({.path = TransferPath::kOffload, .key = 1, .hbm_page = 0, .host = host_page(6)});
  TransferTotals totals{};
  run_batch(batch, device, nullptr, nullptr, totals);
  std::byte* back = host_page(7);
  device.offload(std::vector<int64_t>{1}, std::vector<std::byte*>{back});
  for (int i = 0; i < 64; ++i) ASSERT_EQ(back[i], static_cast<std::byte>(i));
  EXPECT_EQ(totals[static_cast<size_t>(TransferPath::kReload)].blocks, 1);
  EXPECT_EQ(totals[static_cast<size_t>(TransferPath::kHostCopy)].bytes, 64u);
}

}  // namespace
}  // namespace kvtier::hw
