// Does the simulator predict what the GPU measured? The H200 calibration (results/hw/calibration-h200.json,
// made by `kvtier-hw calibrate`) holds pinned-copy timings by size and direction. Overlaid on the H200
// hardware file, the simulator's platform must predict each copy's time: within 5 % from 1 MiB up (cache
// blocks are 1 MiB and more) and within 30 % for the small copies, where per-call overheads the
// latency + size / bandwidth model does not carry dominate. The table printed is the validation report.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "sim/core/calibration.h"
#include "sim/core/config_files.h"
#include "sim/engine/simgrid/platform.h"

namespace kvtier {
namespace {

const char* kCalibration = "results/hw/calibration-h200.json";

// The H200 file with the calibration's measured values laid over it, as a scenario's `calibration:` does.
HardwareConfig calibrated_h200(const Calibration& calibration) {
  HardwareConfig hw = parse_hardware(load_config("h200", "configs/hardware"));
  overlay_calibration(calibration, hw);
  return hw;
}

// Simulated seconds for one copy of `bytes` (or one each way at once for "both").
double predicted_seconds(const HardwareConfig& hw, const std::string& direction, double bytes) {
  return time_on_platform(hw, 1, [&](Platform& platform) {
    std::vector<simgrid::s4u::CommPtr> comms;
    if (direction != "d2h") comms = platform.transfer(Medium::kDram, Medium::kHbm, bytes);
    if (direction != "h2d") {
      auto store = platform.transfer(Medium::kHbm, Medium::kDram, bytes);
      comms.insert(comms.end(), store.begin(), store.end());
    }
    for (auto& c : comms) c->wait();
  });
}

TEST(HardwareValidation, PinnedCopiesMatchTheCalibratedPlatform) {
  if (!std::filesystem::exists(kCalibration))
    GTEST_SKIP() << kCalibration << " is absent: run from the source root";
  const Calibration calibration = load_calibration(kCalibration);
  HardwareConfig hw = calibrated_h200(calibration);
  std::printf("%-5s %12s %12s %12s %8s\n", "dir", "bytes", "measured_us", "predicted_us", "error");
  int checked = 0;
  for (const nlohmann::json& copy : calibration.measurements.at("copy")) {
    std::string direction = copy.at("direction").get<std::string>();
    if (direction == "d2d") continue;  // inside HBM: not a link of the platform
    double bytes = copy.at("bytes").get<double>();
    double measured = copy.at("seconds").get<double>();
    double predicted = predicted_seconds(hw, direction, bytes);
    double error = (predicted - measured) / measured;
    std::printf("%-5s %12.0f %12.2f %12.2f %+7.1f%%\n", direction.c_str(), bytes, measured * 1e6,
                predicted * 1e6, 100 * error);
    EXPECT_LT(std::abs(error), bytes >= (1 << 20) ? 0.05 : 0.30) << direction << " " << bytes << " B";
    ++checked;
  }
  EXPECT_GE(checked, 10);
}

}  // namespace
}  // namespace kvtier
