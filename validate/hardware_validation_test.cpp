// Does the simulator predict what the GPU measured? The H200 calibration (results/hw/calibration-h200.json,
// made by `kvtier-hw calibrate`) holds pinned-copy timings by size and direction. Overlaid on the H200
// hardware file, the simulator's platform must predict each copy's time: within 5 % from 1 MiB up (cache
// blocks are 1 MiB and more) and within 30 % for the small copies, where per-call overheads the
// latency + size / bandwidth model does not carry dominate. The table printed is the validation report.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "embedded_files.h"
#include "platform.h"

namespace kvtier {
namespace {

const char* kCalibration = "results/hw/calibration-h200.json";

// The H200 file with the calibration's `hardware` keys laid over it, as a scenario's `calibration:` does.
HardwareConfig calibrated_h200(const ConfigNode& calibration) {
  ConfigNode hw = load_config("h200", "configs/hardware");
  ConfigNode overlay = calibration.child("hardware");
  for (const std::string& section : overlay.keys()) {
    ConfigNode keys = overlay.child(section);
    for (const std::string& key : keys.keys()) hw.set(section + "." + key, keys.child(key).as_string());
  }
  return parse_hardware(hw);
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
  ConfigNode calibration = ConfigNode::load_file(kCalibration);
  HardwareConfig hw = calibrated_h200(calibration);
  std::printf("%-5s %12s %12s %12s %8s\n", "dir", "bytes", "measured_us", "predicted_us", "error");
  int checked = 0;
  for (const ConfigNode& copy : calibration.child("measurements").child("copy").elements()) {
    std::string direction = copy.string("direction");
    if (direction == "d2d") continue;  // inside HBM: not a link of the platform
    double bytes = copy.number("bytes");
    double measured = copy.number("seconds");
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
