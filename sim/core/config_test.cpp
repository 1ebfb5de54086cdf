#include "sim/core/config.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "sim/core/config_error_test_support.h"
#include "sim/core/config_files.h"
#include "sim/core/hardware.h"
#include "sim/core/model_card.h"

namespace kvtier {
namespace {

using testing::error_of;

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

// Found by the scenario fuzzer: yaml-cpp's own exception escaped where an element was a scalar.
TEST(Config, SetThroughAScalarElementIsAConfigError) {
  ConfigNode root = ConfigNode::load_string("tiers: [hbm, {name: dram}]\n", "s.yaml");
  EXPECT_EQ(error_of([&] { root.set("tiers[0].capacity", "1GiB"); }),
            "--set tiers[0].capacity=1GiB: element 0 of 'tiers' is not a mapping");
  root.set("tiers[1].capacity", "1GiB");
  EXPECT_EQ(root.child("tiers").elements()[1].string("capacity"), "1GiB");
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
  EXPECT_NE(message.find("attention.kind: expected gqa, mha or mla, got 'mha2' (did you mean 'mha'?)"),
            std::string::npos)
      << message;
}

ModelCard built_in_card(const std::string& name) {
  return parse_model_card(load_config(name, "models"));
}

// The values of each model's published config.json (intermediate_size, vocab_size, the expert fields).
TEST(ModelCard, BuiltInCardsCarryTheirPublishedComputeShape) {
  for (const char* name : {"llama-3.1-8b"}) {
    ModelCard card = built_in_card(name);
    EXPECT_EQ(card.intermediate_size, 14336) << name;
    EXPECT_EQ(card.vocab_size, 128256) << name;
    EXPECT_FALSE(card.moe) << name;
  }
  for (const char* name : {"llama-3.1-70b", "llama-3.3-70b"}) {
    ModelCard card = built_in_card(name);
    EXPECT_EQ(card.intermediate_size, 28672) << name;
    EXPECT_EQ(card.vocab_size, 128256) << name;
    EXPECT_FALSE(card.moe) << name;
  }
  ModelCard qwen = built_in_card("qwen3-32b");
  EXPECT_EQ(qwen.intermediate_size, 25600);
  EXPECT_EQ(qwen.vocab_size, 151936);
  EXPECT_FALSE(qwen.moe);
  ModelCard qwen_moe = built_in_card("qwen3-30b-a3b");
  EXPECT_EQ(qwen_moe.intermediate_size, 6144);
  EXPECT_EQ(qwen_moe.vocab_size, 151936);
  EXPECT_EQ(qwen_moe.moe, (MoeShape{.routed_experts = 128, .experts_per_token = 8, .shared_experts = 0,
                                    .expert_intermediate_size = 768, .first_dense_layers = 0}));
  ModelCard deepseek = built_in_card("deepseek-v3");
  EXPECT_EQ(deepseek.intermediate_size, 18432);
  EXPECT_EQ(deepseek.vocab_size, 129280);
  EXPECT_EQ(deepseek.q_lora_rank, 1536);
  EXPECT_EQ(deepseek.moe, (MoeShape{.routed_experts = 256, .experts_per_token = 8, .shared_experts = 1,
                                    .expert_intermediate_size = 2048, .first_dense_layers = 3}));
  ModelCard minimax = built_in_card("minimax-m2.5");
  EXPECT_EQ(minimax.intermediate_size, 1536);
  EXPECT_EQ(minimax.vocab_size, 200064);
  EXPECT_EQ(minimax.moe, (MoeShape{.routed_experts = 256, .experts_per_token = 8, .shared_experts = 0,
                                   .expert_intermediate_size = 1536, .first_dense_layers = 0}));
}

TEST(ModelCard, EveryBuiltInCardReadsBackFromItsYaml) {
  for (const std::string& name : embedded_names("models")) {
    ModelCard card = built_in_card(name);
    EXPECT_EQ(parse_model_card(ConfigNode::load_string(model_card_yaml(card), name + ".yaml")), card) << name;
  }
}

TEST(ModelCard, ComputeShapeIsOptionalAndChecked) {
  const std::string base =
      "name: m\nlayers: 4\nhidden_size: 64\nquery_heads: 4\n"
      "attention: {kind: gqa, kv_heads: 2, head_dim: 16}\ntotal_params: 1e9\n";
  ModelCard plain = parse_model_card(ConfigNode::load_string(base, "m.yaml"));
  EXPECT_EQ(plain.intermediate_size, 0);
  EXPECT_EQ(plain.vocab_size, 0);
  EXPECT_FALSE(plain.moe);
  auto error_with = [&](const std::string& extra) {
    return error_of([&] { parse_model_card(ConfigNode::load_string(base + extra, "m.yaml")); });
  };
  EXPECT_EQ(error_with("vocab_size: 0\n"), "m.yaml:7:13: vocab_size: expected a positive integer");
  EXPECT_EQ(error_with("intermediate_size: 16777217\n"),
            "m.yaml:7:20: intermediate_size: expected a positive integer up to 16777216, got 16777217");
  EXPECT_EQ(error_with("moe: {routed_experts: 8, experts_per_token: 9, expert_intermediate_size: 32}\n"),
            "m.yaml:7:45: moe.experts_per_token: expected at most routed_experts (8), got 9");
  EXPECT_EQ(error_with("intermediate_size: 64\n"
                       "moe: {routed_experts: 8, experts_per_token: 2, expert_intermediate_size: 32, "
                       "first_dense_layers: 4}\n"),
            "m.yaml:8:98: moe.first_dense_layers: expected fewer than the 4 layers, got 4");
  EXPECT_EQ(error_with("moe: {routed_experts: 8, experts_per_token: 2, expert_intermediate_size: 32, "
                       "first_dense_layers: 1}\n"),
            "m.yaml:7:98: moe.first_dense_layers: the leading dense layers need the card's intermediate_size");
  EXPECT_EQ(error_with("moe: {routed_experts: 8, experts_per_token: 2, expert_intermediate_sise: 32}\n"),
            "m.yaml:7:48: moe.expert_intermediate_sise: unknown key 'expert_intermediate_sise' (did you mean "
            "'expert_intermediate_size'?)");
  EXPECT_EQ(error_with("moe: {routed_experts: 8, experts_per_token: 2, expert_intermediate_size: 32, "
                       "shared_experts: -1}\n"),
            "m.yaml:7:94: moe.shared_experts: expected a non-negative integer");
  ModelCard moe = parse_model_card(ConfigNode::load_string(
      base + "moe: {routed_experts: 8, experts_per_token: 2, expert_intermediate_size: 32}\n", "m.yaml"));
  EXPECT_EQ(moe.moe, (MoeShape{.routed_experts = 8, .experts_per_token = 2, .expert_intermediate_size = 32}));
}

TEST(ModelCard, QLoraRankBelongsToMlaOnly) {
  const std::string card = "name: m\nlayers: 2\nhidden_size: 64\nquery_heads: 4\ntotal_params: 1e9\n";
  ModelCard mla = parse_model_card(ConfigNode::load_string(
      card + "attention: {kind: mla, kv_lora_rank: 32, qk_rope_head_dim: 8, qk_nope_head_dim: 16, "
             "v_head_dim: 16, q_lora_rank: 48}\n",
      "m.yaml"));
  EXPECT_EQ(mla.q_lora_rank, 48);
  EXPECT_NE(error_of([&] {
              parse_model_card(ConfigNode::load_string(
                  card + "attention: {kind: gqa, kv_heads: 2, head_dim: 16, q_lora_rank: 48}\n", "m.yaml"));
            }).find("attention.q_lora_rank: unknown key 'q_lora_rank'"),
            std::string::npos);
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

TEST(Config, DuplicateKeyIsAnErrorAtTheSecond) {
  std::string message =
      error_of([] { ConfigNode::load_string("a: 1\nb:\n  c: 1\n  d: 2\n  c: 3\n", "dup.yaml"); });
  EXPECT_EQ(message, "dup.yaml:5:3: b.c: duplicate key 'c' (first at line 3)");
  message = error_of([] { ConfigNode::load_string("tiers:\n  - {name: hbm, kv: bf16, kv: int4}\n", "t.yaml"); });
  EXPECT_EQ(message, "t.yaml:2:27: tiers[0].kv: duplicate key 'kv' (first at line 2)");
}

TEST(Config, DuplicateKeyInASetValueNamesTheSetArgument) {
  ConfigNode root = ConfigNode::load_string("w: {}\n", "s.yaml");
  std::string message = error_of([&] { root.set("w", "{loop: open, loop: closed}"); });
  EXPECT_EQ(message, "--set w={loop: open, loop: closed}: w.loop: duplicate key 'loop'");
}

TEST(Config, AliasesThatExpandBeyondAMillionValuesAreAnError) {
  std::string yaml = "a0: &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n";
  for (int i = 1; i <= 7; ++i) {
    std::string list;
    for (int k = 0; k < 10; ++k) list += (k ? ", *a" : "*a") + std::to_string(i - 1);
    const std::string anchor = std::string("a").append(std::to_string(i));
    yaml += anchor + ": &" + anchor + " [" + list + "]\n";
  }
  std::string message = error_of([&] { ConfigNode::load_string(yaml, "bomb.yaml"); });
  EXPECT_EQ(message, "bomb.yaml: expected at most 100000 values and 1000 levels (aliases expand to more)");
}

TEST(Config, AnAliasInsideItsOwnAnchorIsAnError) {
  std::string message = error_of([] { ConfigNode::load_string("a: &a [1, *a]\n", "cycle.yaml"); });
  EXPECT_EQ(message, "cycle.yaml: expected at most 100000 values and 1000 levels (aliases expand to more)");
  ConfigNode root = ConfigNode::load_string("w: 1\n", "s.yaml");
  message = error_of([&] { root.set("w", "&a {x: *a}"); });
  EXPECT_EQ(message, "--set w=&a {x: *a}: expected at most 100000 values and 1000 levels (aliases expand to more)");
}

TEST(Config, CloneKeepsLinesAndColumns) {
  ConfigNode root = ConfigNode::load_string("name: x\ngpu:\n  count: two\n", "hw.yaml");
  ConfigNode copy = root.clone();
  std::string message = error_of([&] { copy.child("gpu").integer("count"); });
  EXPECT_EQ(message, "hw.yaml:3:10: gpu.count: expected an integer, got 'two'");
}

TEST(Config, CloneCarriesSetValuesAndTheirOrigins) {
  ConfigNode root = ConfigNode::load_string("gpu:\n  count: 2\n", "hw.yaml");
  root.set("gpu.count", "four");
  ConfigNode copy = root.clone();
  root.set("gpu.count", "3");
  std::string message = error_of([&] { copy.child("gpu").integer("count"); });
  EXPECT_EQ(message, "--set gpu.count=four: expected an integer, got 'four'");
}

TEST(Config, AnErrorInASetValueNamesWhereItWasGiven) {
  ConfigNode root =
      ConfigNode::load_string("tiers:\n  - {name: hbm}\n  - {name: dram, capacity: 1GiB}\n", "s.yaml");
  root.set("tiers[1].capacity", "2XB");
  std::string message = error_of([&] { root.child("tiers").elements()[1].quantity("capacity", UnitKind::kBytes); });
  EXPECT_EQ(message.rfind("--set tiers[1].capacity=2XB: unknown unit 'XB'", 0), 0u) << message;
  root.set("w", "{loop: sideways}", "s.yaml:9:7: variants[0].set.w");
  message = error_of([&] { root.child("w").child("loop").fail("expected closed or open"); });
  EXPECT_EQ(message, "s.yaml:9:7: variants[0].set.w: w.loop: expected closed or open");
  root.set("host.dram", "1TiB");  // creates host
  message = error_of([&] { root.child("host").fail("too small"); });
  EXPECT_EQ(message, "--set host.dram=1TiB: host: too small");
  message = error_of([&] { root.child("tiers").elements()[0].child("name").fail("bad"); });
  EXPECT_EQ(message, "s.yaml:2:12: tiers[0].name: bad");
}

TEST(Config, OverrideUsesTellReadUnreadAndReplacedLeaves) {
  ConfigNode root = ConfigNode::load_string("w: {loop: closed}\nx: 1\n", "s.yaml");
  root.set("w", "{loop: open, trace: t.jsonl, more: {a: 1, b: []}}");
  root.set("x", "2");
  root.set("w.more.a", "3", "variant");
  root.child("w").string("loop");
  root.integer("x");
  std::vector<OverrideUse> uses = root.override_uses();
  ASSERT_EQ(uses.size(), 3u);
  EXPECT_EQ(uses[0].origin, "--set w={loop: open, trace: t.jsonl, more: {a: 1, b: []}}");
  using State = OverrideUse::State;
  std::vector<std::tuple<std::string, State, std::string>> leaves;
  for (const auto& leaf : uses[0].leaves) leaves.emplace_back(leaf.path, leaf.state, leaf.replaced_by);
  EXPECT_EQ(leaves, (std::vector<std::tuple<std::string, State, std::string>>{
                        {"w.loop", State::kRead, ""},
                        {"w.trace", State::kUnread, ""},
                        {"w.more.a", State::kReplaced, "variant"},
                        {"w.more.b", State::kUnread, ""}}));
  EXPECT_EQ(uses[1].leaves[0].state, State::kRead);
  EXPECT_EQ(uses[2].leaves[0].state, State::kUnread);
  EXPECT_TRUE(root.clone().override_uses()[1].leaves[0].state == State::kUnread) << "a copy starts unread";
}

TEST(Config, SetPathsAreCanonical) {
  ConfigNode root = ConfigNode::load_string("t:\n  - {a: 1}\n", "s.yaml");
  root.set("t[00].a", "2");
  root.child("t").elements()[0].integer("a");
  EXPECT_EQ(root.override_uses()[0].leaves[0].path, "t[0].a");
  EXPECT_EQ(root.override_uses()[0].leaves[0].state, OverrideUse::State::kRead);
}

TEST(Config, UnsignedIntegersSpanAllOf64Bits) {
  ConfigNode root = ConfigNode::load_string(
      "max: 18446744073709551615\nover: 18446744073709551616\nneg: -1\nbig: 9223372036854775808\n", "s.yaml");
  EXPECT_EQ(root.unsigned_integer("max", 0), 18446744073709551615u);
  EXPECT_EQ(root.unsigned_integer("absent", 7), 7u);
  EXPECT_EQ(error_of([&] { root.unsigned_integer("over", 0); }),
            "s.yaml:2:7: over: expected an integer from 0 to 18446744073709551615, got '18446744073709551616'");
  EXPECT_EQ(error_of([&] { root.unsigned_integer("neg", 0); }),
            "s.yaml:3:6: neg: expected an integer from 0 to 18446744073709551615, got '-1'");
  EXPECT_EQ(error_of([&] { root.integer("big"); }),
            "s.yaml:4:6: big: expected an integer from -9223372036854775808 to 9223372036854775807, got "
            "'9223372036854775808'");
}

// Token and block counts in files take K and M as on the command line (K = 1,024).
TEST(Config, TokenCountsTakeSizeSuffixes) {
  ConfigNode root = ConfigNode::load_string("a: 32K\nb: 1M\nc: 4096\nd: 0\ne: 3X\nf: -2\ng: 8k\n", "s.yaml");
  EXPECT_EQ(root.token_count("a"), 32768);
  EXPECT_EQ(root.token_count("b"), 1048576);
  EXPECT_EQ(root.token_count("c"), 4096);
  EXPECT_EQ(root.token_count("d"), 0);   // plain integers reach the reader's own range check
  EXPECT_EQ(root.token_count("f"), -2);
  EXPECT_EQ(root.token_count("g"), 8192);
  EXPECT_EQ(root.token_count("absent", 256), 256);
  EXPECT_EQ(error_of([&] { root.token_count("e"); }),
            "s.yaml:5:4: e: expected a positive token count such as 4096 or 32K, got '3X'");
}

TEST(Config, NumbersMustBeFinite) {
  ConfigNode root = ConfigNode::load_string(
      "a: nan\nb: inf\nc: 1e400\nd: .inf\nf: 1e300\n", "s.yaml");
  for (const char* key : {"a", "b", "c", "d"}) {
    EXPECT_NE(error_of([&] { root.number(key); }).find("expected a number"), std::string::npos) << key;
  }
  EXPECT_DOUBLE_EQ(root.number("f"), 1e300);
}

TEST(Config, ADirectoryIsNotAConfigurationFile) {
  std::string dir = std::filesystem::temp_directory_path().string();
  EXPECT_EQ(error_of([&] { ConfigNode::load_file(dir); }), dir + ": is a directory, expected a YAML file");
  EXPECT_EQ(error_of([&] { load_config(dir, "models"); }), dir + ": is a directory, expected a YAML file");
}

TEST(Config, ANameTooLongForAPathIsNoSuchFile) {
  std::string name(5000, 'x');
  EXPECT_EQ(error_of([&] { ConfigNode::load_file(name); }), name + ": cannot open file");
  EXPECT_EQ(error_of([&] { load_config(name, "models"); }).rfind(name + ": no such file", 0), 0u);
}

TEST(Config, AnEndlessFileIsAnError) {
  EXPECT_EQ(error_of([] { ConfigNode::load_file("/dev/zero"); }), "/dev/zero: larger than 16 MiB, expected a YAML file");
}

}  // namespace
}  // namespace kvtier
