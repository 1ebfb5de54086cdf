// The comparison library's percentile (validate/compare/stats.h, built without SimGrid) and the
// simulator's summary percentile (sim/engine/metrics.h) must be one definition, or a validation would
// hold the simulator's own p95 against a differently computed one.
#include <gtest/gtest.h>

#include <random>

#include "sim/engine/metrics.h"
#include "validate/compare/stats.h"

namespace kvtier {
namespace {

TEST(PercentileAgreement, HandExampleAndRandomSamples) {
  std::vector<double> hand{0.1, 0.2, 0.4, 0.5, 1.0, 2.0};
  EXPECT_DOUBLE_EQ(validation::percentile(hand, 0.95), 1.75);
  EXPECT_DOUBLE_EQ(percentile(hand, 0.95), 1.75);
  std::mt19937_64 random(7);
  std::lognormal_distribution<double> latency(-1.0, 1.0);
  for (size_t n : {1, 2, 3, 10, 101, 1000}) {
    std::vector<double> sample(n);
    for (double& x : sample) x = latency(random);
    for (double q : {0.0, 0.01, 0.5, 0.95, 0.99, 1.0}) {
      EXPECT_EQ(validation::percentile(sample, q), percentile(sample, q)) << "n=" << n << " q=" << q;
    }
  }
}

}  // namespace
}  // namespace kvtier
