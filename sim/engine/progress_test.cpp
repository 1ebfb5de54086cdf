#include "sim/engine/progress.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <sstream>

namespace kvtier {
namespace {

constexpr double kNoEnd = std::numeric_limits<double>::infinity();

TEST(ProgressLine, EstimatesTheTimeLeftFromTheWindow) {
  ProgressLine line(ProgressRow{"always-load", 0, 2, kNoEnd}, {std::nullopt, 600});
  // A quarter of the window in 3 s of wall time: 9 s left; 2.5M events over 3 s.
  EXPECT_EQ(line.running_text({150, 1234, 2'500'000}, 3.0),
            "always-load: 2m30s simulated, 1234 requests done, 833.3K events/s, about 9.0s left");
  EXPECT_EQ(line.running_text({700, 45'210, 2'500'000}, 5.0),
            "always-load: 11m40s simulated, 45.2K requests done, 500.0K events/s, arrivals over, draining");
}

TEST(ProgressLine, EstimatesTheTimeLeftFromRequestsWithoutAWindow) {
  ProgressLine line(ProgressRow{"run", 0, 1, kNoEnd}, {40'000, std::numeric_limits<double>::infinity()});
  // 10,000 of 40,000 requests in 2 s: 6 s left.
  EXPECT_EQ(line.running_text({3700, 10'000, 3'000'000}, 2.0),
            "run: 1h01m simulated, 10.0K requests done, 1.50M events/s, about 6.0s left");
  ProgressLine open(ProgressRow{"trace", 0, 1, kNoEnd},
                    {std::nullopt, std::numeric_limits<double>::infinity()});
  EXPECT_EQ(open.running_text({10, 5, 100}, 1.0), "trace: 10.0s simulated, 5 requests done, 100 events/s");
}

TEST(ProgressLine, FinishedLineHasPeakMemory) {
  ProgressLine line(ProgressRow{"run", 0, 1, kNoEnd}, {});
  EXPECT_EQ(line.finished_text({3600, 12'031, 400'000}, 0.5, 96.4 * (1 << 20)),
            "run: done, 1h00m simulated in 0.5s, 12.0K requests issued, 800.0K events/s, peak memory 96 MiB");
}

// The second of three rows is redrawn two lines up, and the cursor comes back down, in one write.
TEST(ProgressLine, RedrawsItsOwnRowAndComesBack) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  ProgressLine line(ProgressRow{"b", 1, 3, kNoEnd}, {}, fds[1]);
  line.finish({1, 2, 3});
  close(fds[1]);
  char buffer[512];
  const ssize_t n = read(fds[0], buffer, sizeof buffer);
  close(fds[0]);
  ASSERT_GT(n, 0);
  const std::string written(buffer, static_cast<size_t>(n));
  EXPECT_EQ(written.rfind("\033[2A\r\033[Kb: done, 1.0s simulated in ", 0), 0u) << written;
  EXPECT_TRUE(written.ends_with(" MiB\033[2B\r")) << written;
}

TEST(ProgressLine, RowsAreReservedInOrder) {
  std::ostringstream err;
  reserve_progress_rows(err, {"a", "b"});
  EXPECT_EQ(err.str(), "a: starting\nb: starting\n");
}

}  // namespace
}  // namespace kvtier
