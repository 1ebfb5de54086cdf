// The flow model does what the serving simulation relies on: one transfer alone takes exactly
// latency + bytes / bandwidth, and two transfers on one link share it.
#include "sim/engine/simgrid/platform.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>

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

// A calibrated PCIe latency is a store batch's fixed time (~110 us for an offload on the H200). SimGrid's
// flow model would cap a flow at its TCP window over twice the latency (4 MiB / 220 us = 19 GB/s); these
// links have no window, so 1 GiB still crosses at the link's rate after the latency.
TEST(Platform, ALongLatencyDoesNotCapAFlowsRate) {
  HardwareConfig h200 = hardware("h200");
  h200.pcie_h2d.latency = 110e-6;
  const double bytes = 1024.0 * 1024 * 1024;
  const double end = time_on_platform(h200, 1, [&](Platform& p) {
    for (auto& c : p.transfer(Medium::kDram, Medium::kHbm, bytes)) c->wait();
  });
  EXPECT_NEAR(end, 110e-6 + bytes / 55.2e9, 1e-9);
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

// The bound that lets the store queues skip asking SimGrid about a batch (store_queue.h): a transfer alone
// on its route at the slowest link's bandwidth, each GPU's shard on its own route; the real transfer,
// with its latency, lands after it.
TEST(Platform, TheLeastTransferTimeIsEachShardAloneAtItsSlowestLink) {
  auto expect_near = [](double got, double expected, const std::string& what) {
    // A failed expectation in the child would be lost, so abort loudly instead.
    if (std::abs(got - expected) > 1e-12 * expected) {
      throw std::runtime_error(what + ": " + std::to_string(got) + " s, not " + std::to_string(expected));
    }
  };
  const double bytes = 16.0 * 1024 * 1024;
  const double end = simulate("h200", 1, [&](Platform& p) {
    expect_near(p.least_transfer_seconds(Medium::kNvme, Medium::kHbm, bytes), bytes / 1.1e9, "NVMe");
    for (auto& c : p.transfer(Medium::kNvme, Medium::kHbm, bytes)) c->wait();
  });
  EXPECT_GT(end, bytes / 1.1e9);
  simulate("h100-sxm", 2, [&](Platform& p) {
    expect_near(p.least_transfer_seconds(Medium::kDram, Medium::kHbm, 1e6), 0.5e6 / 55e9, "two GPUs' halves");
  });
}

// What the time series' util_ columns are made of: a link's carried bytes grow with the transfers'
// progress (not when they start), and a cancelled transfer keeps what it had carried.
TEST(Platform, CarriedBytesFollowProgressAndStopAtACancel) {
  const double rate = 55.2e9, latency = 2.8e-6;  // h200's PCIe host to device
  double end = simulate("h200", 1, [&](Platform& p) {
    auto expect = [&](const char* when, double h2d) {
      std::vector<double> carried = p.carried_bytes();
      for (size_t i = 0; i < carried.size(); ++i) {
        double expected = p.link_names()[i] == "dram" || p.link_names()[i] == "pcie_h2d_0" ? h2d : 0;
        if (std::abs(carried[i] - expected) > 1e3)
          throw std::runtime_error(std::string(when) + ": " + p.link_names()[i] + " carried " +
                                   std::to_string(carried[i]) + ", not " + std::to_string(expected));
      }
    };
    auto cancelled = p.transfer(Medium::kDram, Medium::kHbm, rate);  // 1 s of the link alone
    simgrid::s4u::this_actor::sleep_for(0.5);
    expect("half way", (0.5 - latency) * rate);
    for (size_t i = 0; i < p.link_names().size(); ++i) {
      if (p.link_names()[i] == "pcie_h2d_0" && p.link_bytes()[i] != rate)
        throw std::runtime_error("link_bytes counts a transfer whole from its start");
    }
    p.cancel(cancelled);
    simgrid::s4u::this_actor::sleep_for(0.5);
    expect("after the cancel", (0.5 - latency) * rate);
    for (auto& c : p.transfer(Medium::kDram, Medium::kHbm, 1e9)) c->wait();
    expect("after a second transfer", (0.5 - latency) * rate + 1e9);
  });
  EXPECT_NEAR(end, 1.0 + latency + 1e9 / rate, 1e-6);
}

}  // namespace
}  // namespace kvtier
