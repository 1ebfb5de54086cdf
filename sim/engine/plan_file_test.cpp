// The plan file's reader: what it keeps (targets in their fixed order, the menu in the order the search
// bisects it, choices in the file's order, seeds) and its located errors.
#include "sim/engine/plan_file.h"

#include <gtest/gtest.h>

#include "sim/core/config_error_test_support.h"
#include "sim/core/config_files.h"

namespace kvtier {
namespace {

using testing::error_of;

PlanFile read(const std::string& text) {
  return read_plan_file(ConfigNode::load_string(text, "p.yaml"));
}

// Keys with [i] go in block mappings: a flow mapping's plain keys may not hold brackets.
const std::string kSize = "size:\n  key: cache.tiers[1].capacity\n  menu: [64GiB, 128GiB, 1TiB, 2TB]\n";

TEST(PlanFile, ReadsEveryKeyWithTargetsInTheirFixedOrderAndTheMenuAsGiven) {
  PlanFile plan = read(
      "scenario: nvme-seed-llama70b-h100\nvariant: int4-offload\n"
      "set: {workload.sessions: 64, instance.gpus: 8}\n"
      "targets: {hit_rate: 0.5, tpot_p95: 100ms, ttft_p95: 2s}\n"
      "choices:\n  bf16:\n    cache.tiers[1].kv: bf16\n    cache.tiers[2].kv: bf16\n"
      "  int4:\n    cache.tiers[1].kv: int4\n" +
      kSize + "objective: least_cost\nseeds: 3\n");
  EXPECT_EQ(plan.scenario, "nvme-seed-llama70b-h100");
  EXPECT_EQ(plan.variant, "int4-offload");
  EXPECT_EQ(plan.variant_where, "p.yaml:2:10: variant");
  ASSERT_EQ(plan.fixed.size(), 2u);
  EXPECT_EQ(plan.fixed[1].path, "instance.gpus");
  EXPECT_EQ(plan.fixed[1].value, "8");
  ASSERT_EQ(plan.targets.size(), 3u);
  EXPECT_EQ(plan.targets[0].name, "ttft_p95");
  EXPECT_EQ(plan.targets[0].metric, "ttft_s.p95");
  EXPECT_DOUBLE_EQ(plan.targets[0].limit, 2.0);
  EXPECT_FALSE(plan.targets[0].at_least);
  EXPECT_EQ(plan.targets[1].name, "tpot_p95");
  EXPECT_DOUBLE_EQ(plan.targets[1].limit, 0.1);
  EXPECT_EQ(plan.targets[2].name, "hit_rate");
  EXPECT_EQ(plan.targets[2].metric, "hit_rate_total");
  EXPECT_TRUE(plan.targets[2].at_least);
  ASSERT_EQ(plan.choices.size(), 2u);
  EXPECT_EQ(plan.choices[0].name, "bf16");
  EXPECT_EQ(plan.choices[0].overrides.size(), 2u);
  EXPECT_EQ(plan.choices[1].name, "int4");
  EXPECT_EQ(plan.size_key, "cache.tiers[1].capacity");
  std::vector<std::string> menu;
  for (const Override& m : plan.menu) menu.push_back(m.value);
  EXPECT_EQ(menu, (std::vector<std::string>{"64GiB", "128GiB", "1TiB", "2TB"}));
  EXPECT_EQ(plan.menu[2].path, "cache.tiers[1].capacity");
  EXPECT_EQ(plan.menu[2].origin, "p.yaml:13:25: size.menu[2]");
  EXPECT_EQ(plan.objective, PlanObjective::kLeastCost);
  EXPECT_EQ(plan.seeds, (std::vector<uint64_t>{1, 2, 3}));
}

TEST(PlanFile, WithoutChoicesTheScenarioIsTheOneChoice) {
  PlanFile plan = read("scenario: s\ntargets: {ttft_p99: 500ms}\n" + kSize);
  ASSERT_EQ(plan.choices.size(), 1u);
  EXPECT_EQ(plan.choices[0].name, "as-is");
  EXPECT_TRUE(plan.choices[0].overrides.empty());
  EXPECT_EQ(plan.objective, PlanObjective::kLeastSize);
  EXPECT_TRUE(plan.seeds.empty());
  EXPECT_EQ(plan.targets[0].metric, "ttft_s.p99");
}

TEST(PlanFile, AMenuOfNamesKeepsTheFilesOrder) {
  PlanFile plan =
      read("scenario: s\ntargets: {ttft_p95: 2s}\nsize: {key: hardware, menu: [h200, h100-sxm]}\n");
  EXPECT_EQ(plan.menu[0].value, "h200");
  EXPECT_EQ(plan.menu[1].value, "h100-sxm");
}

TEST(PlanFile, MostSizeSearchesTheMenuFromItsLargestEntry) {
  PlanFile plan = read(
      "scenario: s\ntargets: {ttft_p95: 2s}\nsize: {key: workload.sessions, menu: [8, 16, 32]}\n"
      "objective: most_size\n");
  EXPECT_EQ(plan.objective, PlanObjective::kMostSize);
  ASSERT_EQ(plan.menu.size(), 3u);
  EXPECT_EQ(plan.menu[0].value, "32");
  EXPECT_EQ(plan.menu[2].value, "8");
  EXPECT_EQ(plan_direction(plan.objective).best, "largest");
  EXPECT_EQ(plan_json(plan)["objective"], "most_size");
  // The file still gives the menu small to large.
  EXPECT_NE(error_of([] {
              read(
                  "scenario: s\ntargets: {ttft_p95: 2s}\nsize: {key: workload.sessions, menu: [32, 16]}\n"
                  "objective: most_size\n");
            }).find("small to large"),
            std::string::npos);
}

TEST(PlanFile, ErrorsAreLocatedAtTheKey) {
  const std::string head = "scenario: s\ntargets: {ttft_p95: 2s}\n";
  EXPECT_EQ(
      error_of([&] { read(head + "size: {key: k, menu: [64GiB, 1TiB, 512GiB]}\n"); }),
      "p.yaml:3:36: size.menu[2]: expected the menu ordered small to large (the search bisects it), but "
      "512GiB is not larger than 1TiB");
  EXPECT_EQ(
      error_of([&] { read(head + "size: {key: k, menu: [8, 4]}\n"); }),
      "p.yaml:3:26: size.menu[1]: expected the menu ordered small to large (the search bisects it), but "
      "4 is not larger than 8");
  EXPECT_EQ(error_of([&] { read(head + "size: {key: k, menu: [a, a]}\n"); }),
            "p.yaml:3:26: size.menu[1]: given twice in the menu");
  EXPECT_EQ(error_of([&] { read(head + "size: {key: k, menu: []}\n"); }),
            "p.yaml:3:22: size.menu: expected a non-empty list of values, small to large");
  EXPECT_NE(error_of([&] {
              read("scenario: s\ntargets: {ttft_p95: 2}\n" + kSize);
            }).find("p.yaml:2:21: targets.ttft_p95: "),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              read("scenario: s\ntargets: {ttft_p96: 2s}\n" + kSize);
            }).find("did you mean 'ttft_p95'?"),
            std::string::npos);
  EXPECT_EQ(error_of([&] { read("scenario: s\ntargets: {hit_rate: 1.5}\n" + kSize); }),
            "p.yaml:2:21: targets.hit_rate: expected a fraction of the input tokens in (0, 1], such as 0.5");
  EXPECT_EQ(error_of([&] { read(head + "set:\n  cache.tiers[1].capacity: 1TiB\n" + kSize); }),
            "p.yaml:4:28: set.cache.tiers[1].capacity: is the size key: the plan chooses it from size.menu");
  EXPECT_EQ(error_of([&] { read(head + "choices: {a: {seed: 4}}\nseeds: 2\n" + kSize); }),
            "p.yaml:3:21: choices.a.seed: seed is also given by seeds:");
  EXPECT_EQ(error_of([&] { read(head + "set: {x: 1}\nchoices: {a: {x: 2}}\n" + kSize); }),
            "p.yaml:4:18: choices.a.x: also given by set: set it or vary it");
  EXPECT_EQ(
      error_of([&] { read(head + "choices: {a: [1]}\n" + kSize); }),
      "p.yaml:3:14: choices.a: expected a mapping of key.path: value (the overrides of this alternative)");
  EXPECT_NE(error_of([&] {
              read(head + kSize + "objective: least_money\n");
            }).find("p.yaml:6:12: objective: expected least_size, least_cost or most_size"),
            std::string::npos);
  EXPECT_NE(error_of([&] { read(head + kSize + "sizes: 3\n"); }).find("p.yaml:6:1: sizes: "),
            std::string::npos);
  EXPECT_NE(error_of([&] { read(head); }).find("size"), std::string::npos);
}

TEST(PlanFile, EveryBuiltInPlanReads) {
  std::vector<std::string> names = embedded_names("configs/plans");
  EXPECT_NE(std::find(names.begin(), names.end(), "llama70b-h100-dram"), names.end());
  for (const std::string& name : names) {
    PlanFile plan = read_plan_file(load_config(name, "configs/plans"));
    EXPECT_FALSE(plan.menu.empty()) << name;
    EXPECT_EQ(plan.choices.size(), 2u) << name;
  }
}

}  // namespace
}  // namespace kvtier
