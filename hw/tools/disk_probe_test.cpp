#include "hw/tools/disk_probe.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

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

TEST(DiskProbe, RunsDdWithDirectIoOnTheSameFileSystem) {
  const std::string dir = std::filesystem::temp_directory_path().string();
  const auto [write, read] = run_dd(dir, 1 << 20, 4);
  EXPECT_EQ(write.bytes, 4u << 20);
  EXPECT_EQ(read.bytes, 4u << 20);
  EXPECT_NE(write.command.find("oflag=direct"), std::string::npos);
  EXPECT_NE(read.command.find("iflag=direct"), std::string::npos);
}

}  // namespace
}  // namespace kvtier::hw
