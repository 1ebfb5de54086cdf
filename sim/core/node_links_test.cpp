// The node's links and routes against the topology drawn in node_links.h, by hand.
#include "sim/core/node_links.h"

#include <gtest/gtest.h>

#include "sim/core/config.h"

namespace kvtier {
namespace {

HardwareConfig two_gpu_node(int drives, bool gpudirect) {
  HardwareConfig hw;
  hw.gpu.count = 2;
  hw.dram_bandwidth = 200e9;
  hw.pcie_h2d = {55e9, 2e-6};
  hw.pcie_d2h = {54e9, 3e-6};
  hw.nvme.drives = drives;
  hw.nvme.read_bandwidth = 7e9;
  hw.nvme.write_bandwidth = 5e9;
  hw.nvme.latency = 50e-6;
  hw.nvme.gpudirect = gpudirect;
  return hw;
}

std::vector<std::string> names(const NodeLinks& node, const std::vector<int>& route) {
  std::vector<std::string> out;
  for (int l : route) out.push_back(node.links().at(l).name);
  return out;
}

using Names = std::vector<std::string>;

TEST(NodeLinks, LinksInOrderWithTheirRatesAndEveryDirectionItsOwn) {
  const NodeLinks node(two_gpu_node(2, false), 2);
  Names all;
  for (const NodeLink& l : node.links()) all.push_back(l.name);
  EXPECT_EQ(all, (Names{"dram", "pcie_h2d_0", "pcie_d2h_0", "pcie_h2d_1", "pcie_d2h_1", "nvme_read",
                        "nvme_write"}));
  EXPECT_EQ(node.links()[5].bandwidth, 14e9);  // two drives
  EXPECT_EQ(node.links()[6].latency, 50e-6);
  EXPECT_EQ(node.links()[4].bandwidth, 54e9);
  EXPECT_FALSE(node.has(Medium::kRemote));
}

TEST(NodeLinks, RoutesGoThroughDramUnlessGpuDirectSkipsIt) {
  const NodeLinks bounce(two_gpu_node(1, false), 2);
  EXPECT_EQ(names(bounce, bounce.route(Medium::kDram, Medium::kHbm, 1)), (Names{"dram", "pcie_h2d_1"}));
  EXPECT_EQ(names(bounce, bounce.route(Medium::kHbm, Medium::kDram, 0)), (Names{"pcie_d2h_0", "dram"}));
  EXPECT_EQ(names(bounce, bounce.route(Medium::kNvme, Medium::kHbm, 0)),
            (Names{"nvme_read", "dram", "pcie_h2d_0"}));
  EXPECT_EQ(names(bounce, bounce.route(Medium::kHbm, Medium::kNvme, 1)),
            (Names{"pcie_d2h_1", "dram", "nvme_write"}));
  EXPECT_EQ(names(bounce, bounce.route(Medium::kDram, Medium::kNvme, 1)), (Names{"dram", "nvme_write"}));
  const NodeLinks direct(two_gpu_node(1, true), 1);
  EXPECT_EQ(names(direct, direct.route(Medium::kNvme, Medium::kHbm)), (Names{"nvme_read", "pcie_h2d_0"}));
  EXPECT_EQ(names(direct, direct.route(Medium::kHbm, Medium::kNvme)), (Names{"pcie_d2h_0", "nvme_write"}));
}

TEST(NodeLinks, ATransferPathNamesItsTiers) {
  const NodeLinks node(two_gpu_node(1, false), 1);
  const std::map<std::string, Medium> tiers = {
      {"hbm", Medium::kHbm}, {"host", Medium::kDram}, {"disk", Medium::kNvme}};
  EXPECT_EQ(names(node, node.route("disk->hbm", tiers)), (Names{"nvme_read", "dram", "pcie_h2d_0"}));
  EXPECT_EQ(names(node, node.route("hbm->host", tiers)), (Names{"pcie_d2h_0", "dram"}));
  EXPECT_THROW(node.route("hbm->dram", tiers), ConfigError);
  EXPECT_THROW(node.route("hbm", tiers), ConfigError);
}

TEST(NodeLinks, AMissingRouteOrTooManyGpusIsAConfigError) {
  EXPECT_THROW(NodeLinks(two_gpu_node(0, false), 3), ConfigError);
  const NodeLinks no_disk(two_gpu_node(0, false), 1);
  EXPECT_FALSE(no_disk.has(Medium::kNvme));
  EXPECT_THROW(no_disk.route(Medium::kNvme, Medium::kHbm), ConfigError);
  EXPECT_THROW(no_disk.route(Medium::kDram, Medium::kHbm, 1), ConfigError);
}

}  // namespace
}  // namespace kvtier
