// GpuHeat against step times worked out by hand.
#include "sim/core/power_throttle.h"

#include <gtest/gtest.h>

namespace kvtier {
namespace {

constexpr PowerThrottle kThrottle{.onset_s = 0.5, .slowdown = 1.2};

TEST(GpuHeat, AComputeBoundStepSlowsAfterTheOnset) {
  GpuHeat heat(kThrottle);
  EXPECT_DOUBLE_EQ(heat.run(0.3, true), 0.3);  // cool: all of it at the boost clock
  EXPECT_DOUBLE_EQ(heat.heat(), 0.3);
  EXPECT_DOUBLE_EQ(heat.run(0.4, true), 0.2 + 0.2 * 1.2);  // 0.2 s before the onset, 0.2 s of work after
  EXPECT_DOUBLE_EQ(heat.heat(), 0.5);
  EXPECT_DOUBLE_EQ(heat.run(1.0, true), 1.2);  // throttled throughout
}

TEST(GpuHeat, MemoryBoundStepsAndIdleTimeCoolIt) {
  GpuHeat heat(kThrottle);
  heat.run(2.0, true);
  EXPECT_DOUBLE_EQ(heat.run(0.1, false), 0.1);  // a decode step runs at its own time
  EXPECT_NEAR(heat.heat(), 0.4, 1e-12);
  heat.rest(0.15);
  EXPECT_NEAR(heat.heat(), 0.25, 1e-12);
  EXPECT_NEAR(heat.run(0.5, true), 0.25 + 0.25 * 1.2, 1e-12);
  heat.rest(10);
  EXPECT_DOUBLE_EQ(heat.heat(), 0);
}

TEST(GpuHeat, WithoutThrottleEveryStepTakesItsBoostTime) {
  GpuHeat heat(PowerThrottle{});
  EXPECT_DOUBLE_EQ(heat.run(3.0, true), 3.0);
  EXPECT_DOUBLE_EQ(heat.run(0.2, true), 0.2);
}

TEST(GpuHeat, UnthrottledSecondsInvertsACoolRun) {
  for (double boost : {0.1, 0.5, 0.7, 3.0}) {
    GpuHeat heat(kThrottle);
    EXPECT_NEAR(unthrottled_seconds(kThrottle, heat.run(boost, true)), boost, 1e-12) << boost;
  }
}

}  // namespace
}  // namespace kvtier
