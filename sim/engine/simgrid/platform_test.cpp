// The flow model does what the serving simulation relies on: one transfer alone takes exactly
// latency + bytes / bandwidth, and two transfers on one link share it.
#include "sim/engine/simgrid/platform.h"

#include <gtest/gtest.h>

#include "sim/core/config_files.h"

namespace kvtier {
namespace {

HardwareConfig hardware(const std::string& name) {
  return parse_hardware(load_config(name, "configs/hardware"));
}

double simulate(const std::string& node, int gpus, const std::function<void(Platform&)>& body) {
  return time_on_platform(hardware(node), gpus, body);
}

TEST(Platform, OneTransferTakesLatencyPlusSizeOverBandwidth) {
  double bytes = 2.0 * 1024 * 1024;
  double end = simulate("h200", 1, [&](Platform& p) {
    for (auto& c : p.transfer(Medium::kDram, Medium::kHbm, bytes)) c->wait();
  });
  // PCIe H2D 55.2 GB/s, 2.8 us; the DRAM link (101 GB/s, no latency) is not the bottleneck.
  EXPECT_NEAR(end, 2.8e-6 + bytes / 55.2e9, 1e-9);
}

TEST(Platform, TwoLoadsOnOneLinkEachTakeTwiceAsLong) {
  double bytes = 64.0 * 1024 * 1024;
  double end = simulate("h200", 1, [&](Platform& p) {
    auto a = p.transfer(Medium::kDram, Medium::kHbm, bytes);
    auto b = p.transfer(Medium::kDram, Medium::kHbm, bytes);
    a[0]->wait();
    b[0]->wait();
  });
  EXPECT_NEAR(end, 2.8e-6 + 2 * bytes / 55.2e9, 1e-7);
}

TEST(Platform, LoadsAndStoresUseSeparateDirections) {
  double bytes = 64.0 * 1024 * 1024;
  double end = simulate("h200", 1, [&](Platform& p) {
    auto load = p.transfer(Medium::kDram, Medium::kHbm, bytes);
    auto store = p.transfer(Medium::kHbm, Medium::kDram, bytes);
    load[0]->wait();
    store[0]->wait();
  });
  // Both directions at once: 2 × 64 MiB through the 101 GB/s DRAM link bounds them, not PCIe.
  EXPECT_NEAR(end, 2.8e-6 + 2 * bytes / 101e9, 1e-6);
}

TEST(Platform, NvmeLoadIsBoundByTheDisk) {
  double bytes = 16.0 * 1024 * 1024;
  double end = simulate("h200", 1, [&](Platform& p) {
    for (auto& c : p.transfer(Medium::kNvme, Medium::kHbm, bytes)) c->wait();
  });
  EXPECT_NEAR(end, 20e-6 + 2.8e-6 + bytes / 1.1e9, 1e-7);
}

TEST(Platform, BytesAreCountedPerLinkAndSplitOverGpus) {
  double end = simulate("h100-sxm", 2, [&](Platform& p) {
    for (auto& c : p.transfer(Medium::kDram, Medium::kHbm, 1e6)) c->wait();
    const auto& names = p.link_names();
    const auto& bytes = p.link_bytes();
    for (size_t i = 0; i < names.size(); ++i) {
      double expected = names[i] == "dram" ? 1e6 : names[i].starts_with("pcie_h2d_") ? 0.5e6 : 0;
      // A failed expectation in the child would be lost, so abort loudly instead.
      if (bytes[i] != expected) throw std::runtime_error(names[i] + " carried " + std::to_string(bytes[i]));
    }
  });
  EXPECT_NEAR(end, 2.8e-6 + 0.5e6 / 55e9, 1e-9);  // each GPU loads its half
}

}  // namespace
}  // namespace kvtier
