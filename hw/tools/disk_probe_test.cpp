#include "hw/tools/disk_probe.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <random>

#include "hw/store/block_file.h"
#include "hw/store/memory_region.h"

namespace kvtier::hw {
namespace {

TEST(DdReport, ReadsBytesAndSecondsFromTheSummaryLine) {
  const DdRun run = parse_dd_report(
      "64+0 records in\n64+0 records out\n268435456 bytes (268 MB, 256 MiB) copied, 0.243921 s, 1.1 GB/s\n");
  EXPECT_EQ(run.bytes, 268435456u);
  EXPECT_DOUBLE_EQ(run.seconds, 0.243921);
  EXPECT_NEAR(run.bytes_per_s(), 1.1005e9, 0.001e9);
}

TEST(DdReport, RefusesTextWithoutASummary) {
  EXPECT_THROW(parse_dd_report("dd: failed to open 'x': Permission denied\n"), std::runtime_error);
}

TEST(DiskProbe, TimesBothPassesOverTheRequestedBytesAndCleansUp) {
  const std::string dir = std::filesystem::temp_directory_path().string();
  const auto samples = measure_disk(dir, 64 << 10, 2, 4 << 20);
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_EQ(samples[0].op, DiskOp::kWrite);
  EXPECT_EQ(samples[1].op, DiskOp::kRead);
  for (const DiskSample& sample : samples) {
    EXPECT_EQ(sample.bytes, 4u << 20);
    EXPECT_GT(sample.seconds, 0);
  }
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    EXPECT_EQ(entry.path().filename().string().rfind("kvtier-probe-" + std::to_string(::getpid()), 0),
              std::string::npos)
        << "left behind: " << entry.path();
  }
}

TEST(DiskProbe, PutsAndGetsEachBatchThroughTheStoreAndCleansUp) {
  const std::string dir = std::filesystem::temp_directory_path().string();
  const std::vector<uint64_t> batches{1, 3};
  const auto samples = measure_store(dir, 100 << 10, batches);  // not a multiple of 4 KiB
  ASSERT_EQ(samples.size(), 4u);
  for (size_t i = 0; i < samples.size(); ++i) {
    EXPECT_EQ(samples[i].op, i % 2 == 0 ? DiskOp::kWrite : DiskOp::kRead);
    EXPECT_EQ(samples[i].blocks, batches[i / 2]);
    EXPECT_EQ(samples[i].bytes(), batches[i / 2] * (100u << 10));
    EXPECT_GT(samples[i].seconds, 0);
    EXPECT_GE(samples[i].cpu_seconds, 0);
  }
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    EXPECT_EQ(entry.path().filename().string().rfind("kvtier-probe-" + std::to_string(::getpid()), 0),
              std::string::npos)
        << "left behind: " << entry.path();
  }
}

TEST(DiskProbe, RunsDdWithDirectIoOnTheSameFileSystem) {
  const std::string dir = std::filesystem::temp_directory_path().string();
  const auto [write, read] = run_dd(dir, 1 << 20, 4);
  EXPECT_EQ(write.bytes, 4u << 20);
  EXPECT_EQ(read.bytes, 4u << 20);
  EXPECT_NE(write.command.find("oflag=direct"), std::string::npos);
  EXPECT_NE(read.command.find("iflag=direct"), std::string::npos);
}

// Raw transfers at the store's queue depth and I/O size, on both I/O paths: every byte of the range is
// written from the buffer and read back into it, and nothing outside the range is touched.
class RawTransfers : public ::testing::TestWithParam<IoPath> {};

TEST_P(RawTransfers, MoveEveryByteOfTheRangeInTheGivenIoSize) {
  if (GetParam() == IoPath::kAuto) {
    if (const auto why = io_uring_unavailable_reason()) GTEST_SKIP() << "io_uring unavailable: " << *why;
  }
  const std::string path = std::filesystem::temp_directory_path() /
                           ("kvtier-raw-test-" + std::to_string(::getpid()) + "-" + std::to_string(int(GetParam())));
  const uint64_t offset = 4096, bytes = 5 * (64 << 10) + 8192, io_bytes = 64 << 10;  // a short last I/O
  DirectFile file(path, offset + bytes + 4096, IoMode::kDirect);
  MemoryRegion data = allocate_host_region(bytes);
  std::mt19937_64 rng(9);
  for (uint64_t i = 0; i < bytes; ++i) data.data()[i] = static_cast<std::byte>(rng());
  IoQueue queue(GetParam(), 3, 1);
  const DiskSample write = time_raw_transfers(file, DiskOp::kWrite, offset, {data.data(), bytes}, io_bytes, queue);
  EXPECT_EQ(write.op, DiskOp::kWrite);
  EXPECT_EQ(write.bytes, bytes);
  EXPECT_EQ(write.block_bytes, io_bytes);
  EXPECT_EQ(write.queue_depth, 3);
  MemoryRegion back = allocate_host_region(bytes + 8192);
  const iovec whole{back.data(), bytes + 8192};
  file.read_at(0, {&whole, 1});
  EXPECT_EQ(std::memcmp(back.data() + offset, data.data(), bytes), 0);
  EXPECT_EQ(back.data()[0], std::byte{0});
  EXPECT_EQ(back.data()[offset + bytes], std::byte{0});

  MemoryRegion reread = allocate_host_region(bytes);
  const DiskSample read = time_raw_transfers(file, DiskOp::kRead, offset, {reread.data(), bytes}, io_bytes, queue);
  EXPECT_EQ(read.op, DiskOp::kRead);
  EXPECT_GT(read.seconds, 0);
  EXPECT_EQ(std::memcmp(reread.data(), data.data(), bytes), 0);
}

INSTANTIATE_TEST_SUITE_P(IoPaths, RawTransfers, ::testing::Values(IoPath::kThreads, IoPath::kAuto));

TEST(StoreIoSize, IsTheLargestRunOfWholePagesThatFitsTheMergeLimit) {
  EXPECT_EQ(store_io_bytes(64 << 10, 8 << 20, 1 << 30), 8u << 20);
  EXPECT_EQ(store_io_bytes(3 << 20, 8 << 20, 1 << 30), 6u << 20);  // two 3 MiB pages
  EXPECT_EQ(store_io_bytes(16 << 20, 8 << 20, 1 << 30), 16u << 20);  // a page larger than the limit
  EXPECT_EQ(store_io_bytes(64 << 10, 8 << 20, 1 << 20), 1u << 20);  // a batch smaller than the limit
}

}  // namespace
}  // namespace kvtier::hw
