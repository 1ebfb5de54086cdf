// Flattening summaries into columns, the tidy CSV and the means over seeds, against tables written by hand.
#include "sim/engine/sweep_table.h"

#include <gtest/gtest.h>

namespace kvtier {
namespace {

nlohmann::json point(const std::string& point, uint64_t seed, const std::string& value, double p95, double dram) {
  nlohmann::json summary = {{"ttft_s", {{"p95", p95}}},
                            {"hit_rate_tokens", {{{"tier", "hbm"}, {"rate", 0.5}}, {{"tier", "dram"}, {"rate", dram}}}},
                            {"scenario", "text, not a metric"}};
  return {{"point", point}, {"seed", seed}, {"values", {value}}, {"variants", {{{"name", "bf16"}, {"summary", summary}}}}};
}

TEST(SweepTable, SummariesFlattenToDottedNamesWithListElementsNamedByTheirText) {
  nlohmann::json summary = {{"e2e_s", {{"p50", 1.5}}}, {"requests", 7}, {"ok", true}, {"name", "x"},
                            {"links", {{{"link", "dram"}, {"bytes", 10}}, {{"link", "nvme"}, {"bytes", 20}}}},
                            {"same", {{{"k", "a"}, {"v", 1}}, {{"k", "a"}, {"v", 2}}}}};
  std::vector<std::pair<std::string, nlohmann::json>> expected = {
      {"e2e_s.p50", 1.5}, {"links.dram.bytes", 10}, {"links.nvme.bytes", 20}, {"ok", true},
      {"requests", 7},    {"same.0.v", 1},          {"same.1.v", 2}};
  EXPECT_EQ(flatten_metrics(summary), expected);
}

TEST(SweepTable, TheCsvHasARowPerPointVariantAndSeedUnderTheColumnsFirstSeen) {
  nlohmann::json results = sweep_results({{"grid", "..."}}, {"cache.tiers[1].capacity"},
                                         {point("p0", 1, "32GiB", 2.5, 0.25), point("p1", 1, "64GiB,x", 1.25, 0.5)});
  EXPECT_EQ(sweep_csv(results),
            "point,cache.tiers[1].capacity,seed,variant,hit_rate_tokens.hbm.rate,hit_rate_tokens.dram.rate,ttft_s.p95\n"
            "p0,32GiB,1,bf16,0.5,0.25,2.5\n"
            "p1,\"64GiB,x\",1,bf16,0.5,0.5,1.25\n");
}

TEST(SweepTable, MeansAreOverEachPointsSeeds) {
  nlohmann::json results = sweep_results({}, {"k"},
                                         {point("p0", 1, "a", 1.0, 0.25), point("p0", 2, "a", 2.0, 0.75),
                                          point("p1", 1, "b", 4.0, 0.5)});
  std::vector<SweepMeans> means = mean_over_seeds(results, {"ttft_s.p95", "hit_rate_tokens.dram.rate", "missing"});
  ASSERT_EQ(means.size(), 2u);
  EXPECT_EQ(means[0].point, "p0");
  EXPECT_EQ(means[0].values, std::vector<std::string>{"a"});
  EXPECT_EQ(means[0].seeds, 2u);
  EXPECT_DOUBLE_EQ(*means[0].means[0], 1.5);
  EXPECT_DOUBLE_EQ(*means[0].means[1], 0.5);
  EXPECT_FALSE(means[0].means[2].has_value());
  EXPECT_EQ(means[1].seeds, 1u);
  EXPECT_DOUBLE_EQ(*means[1].means[0], 4.0);
}

}  // namespace
}  // namespace kvtier
