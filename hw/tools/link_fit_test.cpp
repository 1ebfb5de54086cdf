#include "hw/tools/link_fit.h"

#include <gtest/gtest.h>

#include <vector>

namespace kvtier::hw {
namespace {

TEST(LinkFit, RecoversLatencyAndBandwidthOfAnExactLink) {
  // 2.8 us + bytes / 55.2 GB/s, the H200's pinned host-to-device link in configs/hardware/h200.yaml.
  std::vector<TransferTiming> timings;
  for (uint64_t bytes = 4096; bytes <= (64u << 20); bytes *= 4)
    timings.push_back({bytes, 2.8e-6 + bytes / 55.2e9});
  const LinkFit fit = fit_link(timings);
  EXPECT_NEAR(fit.latency, 2.8e-6, 1e-12);
  EXPECT_NEAR(fit.bandwidth, 55.2e9, 1e3);
}

TEST(LinkFit, ReproducesTheHardwareFilesLatencyFromItsTwoQuotedRates) {
  // h200.yaml quotes 4 KiB at 1.4 GB/s and 64 KiB at 16.5 GB/s. Two points fit exactly:
  // slope = (65536 / 16.5e9 - 4096 / 1.4e9) / 61440 = 1 / 58.73 GB/s, latency = 2.926 us - 4096 * slope.
  const std::vector<TransferTiming> timings = {{4096, 4096 / 1.4e9}, {65536, 65536 / 16.5e9}};
  const LinkFit fit = fit_link(timings);
  EXPECT_NEAR(fit.latency, 2.856e-6, 0.001e-6);
  EXPECT_NEAR(fit.bandwidth, 58.73e9, 0.01e9);
}

TEST(LinkFit, RefusesTimingsOfOneSize) {
  const std::vector<TransferTiming> timings = {{4096, 1e-6}, {4096, 2e-6}};
  EXPECT_THROW(fit_link(timings), std::invalid_argument);
}

}  // namespace
}  // namespace kvtier::hw
