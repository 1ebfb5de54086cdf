// The I/O engine's contract on both paths: before(i) runs before request i's bytes go to the disk, after(i)
// once its bytes are all there (a write) or all in memory (a read), each exactly once, whatever the order
// the requests complete in.
#include "hw/store/io_queue.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <vector>

#include "hw/store/memory_region.h"

namespace kvtier::hw {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kRequestBytes = 64 * 1024;
constexpr int kRequests = 64;

class IoQueuePaths : public ::testing::TestWithParam<IoPath> {
 protected:
  void SetUp() override {
    if (GetParam() == IoPath::kAuto) {
      if (auto reason = io_uring_unavailable_reason()) GTEST_SKIP() << "no io_uring here: " << *reason;
    }
    path_ = fs::temp_directory_path() / ("kvtier-io-queue-" + std::to_string(::getpid()) + "-" +
                                         (GetParam() == IoPath::kAuto ? "io_uring" : "threads"));
    fs::remove(path_);
    file_ = std::make_unique<DirectFile>(path_.string(), kRequests * kRequestBytes, IoMode::kDirect);
    for (int i = 0; i < kRequests; ++i) {
      iovecs_.push_back({memory_.data() + i * kRequestBytes, kRequestBytes});
    }
    for (int i = 0; i < kRequests; ++i) {
      // Out of file order, so that completions arrive in any order.
      const uint64_t slot = static_cast<uint64_t>((i * 37) % kRequests);
      requests_.push_back({file_.get(), slot * kRequestBytes, std::span(&iovecs_[i], 1)});
    }
  }
  void TearDown() override {
    file_.reset();
    fs::remove(path_);
  }
  // Request i's bytes: every byte its number, plus one.
  static std::byte mark(size_t i) { return static_cast<std::byte>(i + 1); }
  bool holds_mark(size_t i, const std::byte* bytes) const {
    for (uint64_t b = 0; b < kRequestBytes; ++b) {
      if (bytes[b] != mark(i)) return false;
    }
    return true;
  }
  bool file_holds_mark(size_t i) const {
    MemoryRegion check = allocate_host_region(kRequestBytes);
    iovec buffer{check.data(), kRequestBytes};
    file_->read_at(requests_[i].offset, std::span(&buffer, 1));
    return holds_mark(i, check.data());
  }

  fs::path path_;
  std::unique_ptr<DirectFile> file_;
  MemoryRegion memory_ = allocate_host_region(kRequests * kRequestBytes);
  std::vector<iovec> iovecs_;
  std::vector<IoRequest> requests_;
};

TEST_P(IoQueuePaths, WritesGoOutAfterTheirBeforeAndAfterSeesThemOnTheDisk) {
  IoQueue queue(GetParam(), 8, 2);
  std::vector<std::atomic<int>> before_calls(kRequests), after_calls(kRequests);
  std::atomic<int> after_saw_missing{0};
  queue.run(
      IoDirection::kWrite, requests_,
      [&](size_t i) {
        ++before_calls[i];
        std::memset(memory_.data() + i * kRequestBytes, static_cast<int>(mark(i)), kRequestBytes);
      },
      [&](size_t i) {
        ++after_calls[i];
        if (!file_holds_mark(i)) ++after_saw_missing;
      });
  EXPECT_EQ(after_saw_missing, 0);
  for (int i = 0; i < kRequests; ++i) {
    EXPECT_EQ(before_calls[i], 1) << i;
    EXPECT_EQ(after_calls[i], 1) << i;
    EXPECT_TRUE(file_holds_mark(i)) << i;
  }
}

TEST_P(IoQueuePaths, ReadsAreWholeWhenAfterRuns) {
  for (int i = 0; i < kRequests; ++i) std::memset(memory_.data() + i * kRequestBytes, static_cast<int>(mark(i)), kRequestBytes);
  IoQueue queue(GetParam(), 8, 2);
  queue.run(IoDirection::kWrite, requests_, [](size_t) {}, [](size_t) {});
  std::memset(memory_.data(), 0, memory_.bytes());
  std::vector<std::atomic<int>> after_calls(kRequests);
  std::atomic<int> incomplete{0};
  queue.run(
      IoDirection::kRead, requests_, [](size_t) {},
      [&](size_t i) {
        ++after_calls[i];
        if (!holds_mark(i, memory_.data() + i * kRequestBytes)) ++incomplete;
      });
  EXPECT_EQ(incomplete, 0);
  for (int i = 0; i < kRequests; ++i) EXPECT_EQ(after_calls[i], 1) << i;
}

// A before() that throws stops the batch: what was issued completes (its after() runs), nothing later is
// issued, and run() rethrows. One request in flight at a time, so the order is the requests' own.
TEST_P(IoQueuePaths, AFailingBeforeStopsTheBatchAndIsRethrown) {
  IoQueue queue(GetParam(), 1, 1);
  std::atomic<int> issued{0}, finished{0};
  EXPECT_THROW(queue.run(
                   IoDirection::kWrite, requests_,
                   [&](size_t i) {
                     if (i == 20) throw std::runtime_error("checksum failed");
                     ++issued;
                   },
                   [&](size_t) { ++finished; }),
               std::runtime_error);
  EXPECT_EQ(issued, 20);
  EXPECT_EQ(finished, 20);
}

INSTANTIATE_TEST_SUITE_P(Paths, IoQueuePaths, ::testing::Values(IoPath::kAuto, IoPath::kThreads),
                         [](const auto& info) { return info.param == IoPath::kAuto ? "io_uring" : "threads"; });

}  // namespace
}  // namespace kvtier::hw
