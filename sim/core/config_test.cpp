#include "config.h"

#include <gtest/gtest.h>

#include "hardware.h"
#include "model_card.h"

namespace kvtier {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Config, MalformedYamlNamesFileLineAndColumn) {
  std::string message = error_of([] { ConfigNode::load_string("a: 1\nb: [1, 2\n", "bad.yaml"); });
  EXPECT_EQ(message.rfind("bad.yaml:3:1: invalid YAML", 0), 0u) << message;
}

TEST(Config, UnknownKeySuggestsTheClosest) {
  ConfigNode root = ConfigNode::load_string("name: x\nlayres: 3\n", "card.yaml");
  std::string message = error_of([&] { root.allow_keys({"name", "layers"}); });
  EXPECT_EQ(message, "card.yaml:2:1: layres: unknown key 'layres' (did you mean 'layers'?)");
}

TEST(Config, WrongTypeNamesTheKeyPath) {
  ConfigNode root = ConfigNode::load_string("gpu:\n  count: two\n", "hw.yaml");
  std::string message = error_of([&] { root.child("gpu").integer("count"); });
  EXPECT_EQ(message, "hw.yaml:2:10: gpu.count: expected an integer, got 'two'");
}

TEST(Config, MissingKeyIsReportedAtItsParent) {
  ConfigNode root = ConfigNode::load_string("gpu:\n  count: 2\n", "hw.yaml");
  std::string message = error_of([&] { root.child("gpu").quantity("hbm_capacity", UnitKind::kBytes); });
  EXPECT_EQ(message, "hw.yaml:2:3: gpu: missing required key 'hbm_capacity'");
}

TEST(Config, MissingUnitIsAnError) {
  ConfigNode root = ConfigNode::load_string("pcie:\n  h2d_bandwidth: 55\n", "hw.yaml");
  std::string message = error_of([&] { root.child("pcie").quantity("h2d_bandwidth", UnitKind::kBandwidth); });
  EXPECT_NE(message.find("hw.yaml:2:18: pcie.h2d_bandwidth: a unit is required"), std::string::npos)
      << message;
}

TEST(Config, SetOverridesNestedKeys) {
  ConfigNode root = ConfigNode::load_string("gpu:\n  count: 2\n", "hw.yaml");
  root.set("gpu.count", "4");
  root.set("host.dram_capacity", "1TiB");
  EXPECT_EQ(root.child("gpu").integer("count"), 4);
  EXPECT_DOUBLE_EQ(root.child("host").quantity("dram_capacity", UnitKind::kBytes),
                   1024.0 * 1024 * 1024 * 1024);
  EXPECT_THROW(root.set("gpu.count.x", "1"), ConfigError);
}

TEST(Config, SetReachesIntoLists) {
  ConfigNode root =
      ConfigNode::load_string("tiers:\n  - {name: hbm}\n  - {name: dram, capacity: 1GiB}\n", "s.yaml");
  root.set("tiers[1].capacity", "2TiB");
  EXPECT_EQ(root.child("tiers").elements()[1].string("capacity"), "2TiB");
  EXPECT_THROW(root.set("tiers[2].capacity", "1GiB"), ConfigError);
  EXPECT_THROW(root.set("tiers[x].capacity", "1GiB"), ConfigError);
}

TEST(Config, ModelCardRejectsNonsense) {
  std::string card =
      "name: m\nlayers: 0\nhidden_size: 8\nquery_heads: 1\n"
      "attention: {kind: gqa, kv_heads: 1, head_dim: 8}\ntotal_params: 1e9\n";
  std::string message = error_of([&] { parse_model_card(ConfigNode::load_string(card, "m.yaml")); });
  EXPECT_EQ(message, "m.yaml:2:9: layers: expected a positive integer");
  std::string mla =
      "name: m\nlayers: 2\nhidden_size: 8\nquery_heads: 1\nattention: {kind: mha2}\ntotal_params: 1e9\n";
  message = error_of([&] { parse_model_card(ConfigNode::load_string(mla, "m.yaml")); });
  EXPECT_NE(message.find("attention.kind: expected gqa, mha or mla; got 'mha2'"), std::string::npos)
      << message;
}

TEST(Config, HardwareFractionOutOfRange) {
  std::string hw =
      "name: x\ngpu: {model: g, hbm_capacity: 1GB, hbm_bandwidth: 1TB/s, bf16_dense: 1TFLOPS, "
      "prefill_mfu: 1.5}\nhost: {dram_capacity: 1GB, dram_bandwidth: 1GB/s}\n"
      "pcie: {h2d_bandwidth: 1GB/s, d2h_bandwidth: 1GB/s}\n";
  std::string message = error_of([&] { parse_hardware(ConfigNode::load_string(hw, "hw.yaml")); });
  EXPECT_NE(message.find("gpu.prefill_mfu: expected a fraction in (0, 1]"), std::string::npos) << message;
}

TEST(Config, PcieLatencyPerDirectionOverridesTheSharedOne) {
  const std::string base =
      "name: x\ngpu: {model: g, hbm_capacity: 1GB, hbm_bandwidth: 1TB/s, bf16_dense: 1TFLOPS}\n"
      "host: {dram_capacity: 1GB, dram_bandwidth: 1GB/s}\n"
      "pcie: {h2d_bandwidth: 1GB/s, d2h_bandwidth: 1GB/s, latency: 2us";
  HardwareConfig shared = parse_hardware(ConfigNode::load_string(base + "}\n", "hw.yaml"));
  EXPECT_DOUBLE_EQ(shared.pcie_h2d.latency, 2e-6);
  EXPECT_DOUBLE_EQ(shared.pcie_d2h.latency, 2e-6);
  HardwareConfig own = parse_hardware(ConfigNode::load_string(base + ", d2h_latency: 1.5us}\n", "hw.yaml"));
  EXPECT_DOUBLE_EQ(own.pcie_h2d.latency, 2e-6);
  EXPECT_DOUBLE_EQ(own.pcie_d2h.latency, 1.5e-6);
}

}  // namespace
}  // namespace kvtier
