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

// The H200's prefill attention slows with the clock, its linear layers less (power_throttle.h).
TEST(GpuHeat, PrefillAttentionSlowsByItsOwnFactor) {
  const PowerThrottle split{.onset_s = 0.5, .slowdown = 1.2, .attention_slowdown = 1.4};
  GpuHeat heat(split);
  heat.run(0.5, true);
  // 1 s of work, 0.25 s of it attention: 0.75 × 1.2 + 0.25 × 1.4.
  EXPECT_NEAR(heat.run(1.0, true, 0.25), 0.9 + 0.35, 1e-12);
  // Without an attention factor of its own, attention slows as the rest does.
  GpuHeat same(kThrottle);
  same.run(0.5, true);
  EXPECT_NEAR(same.run(1.0, true, 0.25), 1.2, 1e-12);
  for (double boost : {0.3, 0.8, 2.0}) {
    GpuHeat cool(split);
    EXPECT_NEAR(unthrottled_seconds(split, cool.run(boost, true, 0.4 * boost), 0.4), boost, 1e-12) << boost;
  }
}

}  // namespace
}  // namespace kvtier
