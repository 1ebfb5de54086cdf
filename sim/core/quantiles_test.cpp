#include "sim/core/quantiles.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace kvtier {
namespace {

// numpy.percentile([3, 1, 4, 1, 5], q): 50 -> 3, 95 -> 4.8, 10 -> 1, 99 -> 4.96.
TEST(Percentile, IsNumpyLinear) {
  std::vector<double> v{3, 1, 4, 1, 5};
  EXPECT_DOUBLE_EQ(percentile(v, 0.50), 3);
  EXPECT_DOUBLE_EQ(percentile(v, 0.95), 4.8);
  EXPECT_DOUBLE_EQ(percentile(v, 0.10), 1);
  EXPECT_DOUBLE_EQ(percentile(v, 0.99), 4.96);
  EXPECT_DOUBLE_EQ(percentile({7}, 0.95), 7);
}

std::vector<double> latencies(size_t n, uint64_t seed) {
  std::mt19937_64 random(seed);
  std::lognormal_distribution<double> latency(-1.0, 1.5);
  std::vector<double> values(n);
  for (double& x : values) x = latency(random);
  return values;
}

TEST(LatencyQuantiles, BelowTheLimitIsExactlyThePercentileOfTheValues) {
  const std::vector<double> values = latencies(1001, 3);
  LatencyQuantiles q(1001);
  double sum = 0;
  for (double v : values) {
    q.add(v);
    sum += v;
  }
  ASSERT_TRUE(q.exact());
  for (double p : {0.0, 0.5, 0.95, 0.99, 1.0}) EXPECT_EQ(q.percentile(p), percentile(values, p)) << p;
  EXPECT_EQ(q.mean(), sum / 1001);
}

// Past the limit every percentile is within the stated relative error of the exact one, on spread
// latencies (six decades), a sample with many equal values, and one with zeros.
TEST(LatencyQuantiles, PastTheLimitTheSketchIsWithinItsRelativeError) {
  std::vector<double> spread = latencies(200'000, 5);
  std::vector<double> repeated(50'000, 0.25);
  repeated.insert(repeated.end(), 50'000, 4.0);
  std::vector<double> with_zeros = latencies(30'000, 9);
  with_zeros.insert(with_zeros.end(), 10'000, 0.0);
  for (const std::vector<double>* values : {&spread, &repeated, &with_zeros}) {
    LatencyQuantiles q(1000);
    for (double v : *values) q.add(v);
    ASSERT_FALSE(q.exact());
    EXPECT_EQ(q.count(), static_cast<int64_t>(values->size()));
    for (double p : {0.0, 0.01, 0.25, 0.5, 0.9, 0.95, 0.99, 0.999, 1.0}) {
      const double exact = percentile(*values, p);
      EXPECT_LE(std::abs(q.percentile(p) - exact), LatencyQuantiles::kRelativeError * exact + 1e-15)
          << "p=" << p << " exact " << exact;
    }
  }
}

// Past the limit the figures are the sketch's: close to the exact ones, not equal.
TEST(LatencyQuantiles, TheSketchIsNotExactButClose) {
  const std::vector<double> values = latencies(20'000, 11);
  LatencyQuantiles q(100);
  for (double v : values) q.add(v);
  const double exact = percentile(values, 0.5);
  EXPECT_NE(q.percentile(0.5), exact);
  EXPECT_NEAR(q.percentile(0.5), exact, LatencyQuantiles::kRelativeError * exact);
}

}  // namespace
}  // namespace kvtier
