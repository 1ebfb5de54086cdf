// The plan's search on fake evaluators whose answers are known: bisection finds the smallest passing size
// of a monotone function (every threshold, every degree of parallelism), probes in the bisection's order,
// seeds that disagree with the first move the answer, a non-monotone menu is reported, and a menu with no
// passing size names its closest point.
#include "sim/engine/plan_search.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

namespace kvtier {
namespace {

PlanTarget ttft_target(double limit) {
  return {"ttft_p95", "ttft_s.p95", limit, false, ""};
}
PlanTarget hit_target(double limit) {
  return {"hit_rate", "hit_rate_total", limit, true, ""};
}

nlohmann::json summary(double ttft_p95, double hit_rate = 1.0) {
  return {{"ttft_s", {{"p95", ttft_p95}}}, {"hit_rate_total", hit_rate}};
}

// A fake evaluator that records every probe.
struct Fake {
  explicit Fake(std::function<nlohmann::json(const PlanProbe&)> function) : f(std::move(function)) {}
  std::function<nlohmann::json(const PlanProbe&)> f;
  std::vector<PlanProbe> probes;
  std::vector<size_t> batch_sizes;

  PlanEvaluator evaluator() {
    return [this](const std::vector<PlanProbe>& batch) {
      batch_sizes.push_back(batch.size());
      std::vector<nlohmann::json> out;
      for (const PlanProbe& p : batch) {
        probes.push_back(p);
        out.push_back(f(p));
      }
      return out;
    };
  }
  std::vector<size_t> sizes_with_seed(uint64_t seed) const {
    std::vector<size_t> sizes;
    for (const PlanProbe& p : probes) {
      if (p.seed == seed) sizes.push_back(p.size);
    }
    return sizes;
  }
};

PlanSearchOptions options(size_t sizes, std::vector<PlanTarget> targets, std::vector<uint64_t> seeds = {1},
                          size_t parallel = 1, std::vector<std::string> choices = {"only"}) {
  PlanSearchOptions o;
  o.targets = std::move(targets);
  o.choices = std::move(choices);
  for (size_t s = 0; s < sizes; ++s) o.sizes.push_back(std::string("s").append(std::to_string(s)));
  o.seeds = std::move(seeds);
  o.parallel = parallel;
  return o;
}

TEST(PlanSearch, BisectionFindsTheSmallestPassingSizeOfAMonotoneFunctionForEveryThreshold) {
  const size_t n = 9;
  for (size_t parallel : {1u, 2u, 3u, 8u}) {
    for (size_t threshold = 0; threshold <= n; ++threshold) {
      // TTFT falls with the size; it meets 2 s from `threshold` on (never when threshold == n).
      Fake fake{[&](const PlanProbe& p) {
        return summary(p.size >= threshold ? 1.5 : 3.0 + 0.1 * double(n - p.size));
      }};
      PlanSearchResult r = search_plan(options(n, {ttft_target(2.0)}, {1, 2}, parallel), fake.evaluator());
      const ChoiceOutcome& out = r.choices[0];
      SCOPED_TRACE("parallel " + std::to_string(parallel) + ", threshold " + std::to_string(threshold));
      if (threshold == n) {
        EXPECT_FALSE(out.chosen);
        EXPECT_EQ(out.closest, n - 1);  // the largest misses by least
      } else {
        EXPECT_EQ(out.chosen, threshold);
        EXPECT_EQ(out.binding, threshold == 0 ? std::nullopt : std::optional<size_t>(threshold - 1));
        // Both confirmed with every seed.
        EXPECT_EQ(out.point(threshold)->seeds, (std::vector<uint64_t>{1, 2}));
        if (threshold > 0) {
          EXPECT_EQ(out.point(threshold - 1)->seeds, (std::vector<uint64_t>{1, 2}));
        }
      }
      EXPECT_TRUE(out.non_monotone.empty());
      EXPECT_EQ(r.simulations, fake.probes.size());
      // No probe is run twice, and never more than `parallel` at once in the bisection.
      for (size_t i = 0; i < fake.probes.size(); ++i) {
        for (size_t j = 0; j < i; ++j) {
          EXPECT_FALSE(fake.probes[i].size == fake.probes[j].size &&
                       fake.probes[i].seed == fake.probes[j].seed);
        }
      }
      // A bisection: about log2(n + 1) first-seed probes (one more for the confirmation) when one runs at a
      // time.
      if (parallel == 1) {
        EXPECT_LE(fake.sizes_with_seed(1).size(), 5u);
      }
    }
  }
}

TEST(PlanSearch, ProbesInBisectionOrderThenConfirmsTheAnswerAndTheSizeBelow) {
  Fake fake{[](const PlanProbe& p) { return summary(p.size >= 3 ? 1.0 : 5.0); }};
  PlanSearchResult r = search_plan(options(6, {ttft_target(2.0)}, {1, 2, 3}), fake.evaluator());
  // Seed 1: the middle of [0, 6) fails, then the middle of (2, 6) passes, then 3 between them passes.
  EXPECT_EQ(fake.sizes_with_seed(1), (std::vector<size_t>{2, 4, 3}));
  // Then seeds 2 and 3 at the answer and the size below, in one batch.
  EXPECT_EQ(fake.batch_sizes, (std::vector<size_t>{1, 1, 1, 4}));
  EXPECT_EQ(r.choices[0].chosen, 3u);
  EXPECT_EQ(r.choices[0].binding, 2u);
  EXPECT_EQ(r.simulations, 7u);
  EXPECT_EQ(r.rounds, 4u);
  ASSERT_EQ(r.choices[0].points.size(), 3u);  // the frontier: 2, 3 and 4, by size
  EXPECT_EQ(r.choices[0].points[0].size, 2u);
  EXPECT_FALSE(r.choices[0].points[0].pass);
  EXPECT_TRUE(r.choices[0].points[2].pass);
  EXPECT_EQ(r.choices[0].points[2].seeds, (std::vector<uint64_t>{1}));
}

TEST(PlanSearch, ChoicesAreSearchedTogetherOneRoundForAll) {
  // Choice 0 passes from size 1, choice 1 from size 4.
  Fake fake{[](const PlanProbe& p) { return summary(p.size >= (p.choice == 0 ? 1u : 4u) ? 1.0 : 5.0); }};
  PlanSearchResult r = search_plan(options(6, {ttft_target(2.0)}, {1}, 2, {"a", "b"}), fake.evaluator());
  EXPECT_EQ(r.choices[0].chosen, 1u);
  EXPECT_EQ(r.choices[1].chosen, 4u);
  EXPECT_EQ(fake.batch_sizes[0], 2u);  // the first round probes both choices at once
}

TEST(PlanSearch, SeedsThatDisagreeWithTheFirstMoveTheAnswerUp) {
  // Seed 1 passes from size 2; seeds 2 and 3 only from size 3, so size 2's mean fails.
  Fake fake{[](const PlanProbe& p) { return summary(p.size >= (p.seed == 1 ? 2u : 3u) ? 1.0 : 4.0); }};
  PlanSearchResult r = search_plan(options(6, {ttft_target(2.0)}, {1, 2, 3}), fake.evaluator());
  EXPECT_EQ(r.choices[0].chosen, 3u);
  EXPECT_EQ(r.choices[0].binding, 2u);
  EXPECT_FALSE(r.choices[0].point(2)->pass);
  EXPECT_DOUBLE_EQ(r.choices[0].point(2)->mean[0], 3.0);  // (1 + 4 + 4) / 3
  EXPECT_DOUBLE_EQ(r.choices[0].point(2)->worst[0], 4.0);
}

TEST(PlanSearch, SeedsThatPassASmallerSizeMoveTheAnswerDown) {
  // Seed 1 passes from size 3 only; the others from size 1, so the means pass 2 (and 1: (5+1+1)/3 > 2 fails).
  Fake fake{[](const PlanProbe& p) { return summary(p.size >= (p.seed == 1 ? 3u : 1u) ? 1.0 : 5.0); }};
  PlanSearchResult r = search_plan(options(6, {ttft_target(2.0)}, {1, 2, 3}), fake.evaluator());
  // Size 2's mean is (5 + 1 + 1) / 3 = 2.33: fails; so the answer stays 3 with 2 binding.
  EXPECT_EQ(r.choices[0].chosen, 3u);
  // With a looser limit the mean at size 2 passes and the answer moves down to it; size 1 (and 0) fail.
  Fake loose{[](const PlanProbe& p) { return summary(p.size >= (p.seed == 1 ? 3u : 2u) ? 1.0 : 3.5); }};
  PlanSearchResult moved = search_plan(options(6, {ttft_target(2.5)}, {1, 2, 3}), loose.evaluator());
  EXPECT_EQ(moved.choices[0].chosen, 2u);
  EXPECT_EQ(moved.choices[0].binding, 1u);
}

TEST(PlanSearch, ANonMonotoneMenuIsReported) {
  // Passes at 1 and from 5 on, fails at 0, 2, 3 and 4: three probes at once see 1 pass and 3 fail.
  Fake fake{[](const PlanProbe& p) { return summary(p.size == 1 || p.size >= 5 ? 1.0 : 5.0); }};
  PlanSearchResult r = search_plan(options(8, {ttft_target(2.0)}, {1}, 3), fake.evaluator());
  EXPECT_EQ(fake.sizes_with_seed(1).size() >= 3, true);
  EXPECT_EQ(r.choices[0].chosen, 1u);
  ASSERT_FALSE(r.choices[0].non_monotone.empty());
  EXPECT_EQ(r.choices[0].non_monotone[0],
            "only: s1 meets every target but the larger s3 misses ttft_p95 5.00 s > 2.00 s (seed 1)");
}

TEST(PlanSearch, NoPassingSizeNamesTheClosestPointAndTheTargetItMisses) {
  // The hit rate grows with the size but never reaches 0.9; TTFT is always fine.
  Fake fake{[](const PlanProbe& p) { return summary(1.0, 0.1 * double(p.size + 1)); }};
  PlanSearchResult r = search_plan(options(5, {ttft_target(2.0), hit_target(0.9)}, {1, 2}), fake.evaluator());
  const ChoiceOutcome& out = r.choices[0];
  EXPECT_FALSE(out.chosen);
  EXPECT_FALSE(out.binding);
  EXPECT_EQ(out.closest, 4u);
  const PlanPoint* closest = out.point(4);
  EXPECT_TRUE(meets(ttft_target(2.0), closest->mean[0]));
  EXPECT_FALSE(meets(hit_target(0.9), closest->mean[1]));
  EXPECT_NEAR(shortfall(hit_target(0.9), closest->mean[1]), (0.9 - 0.5) / 0.9, 1e-12);
  EXPECT_EQ(closest->seeds, (std::vector<uint64_t>{1, 2}));  // the largest confirmed failing with every seed
}

TEST(PlanSearch, TheClosestPointIsRunWithEverySeed) {
  // Nothing passes; size 2, which the bisection ran with seed 1 only, comes closest.
  Fake fake{[](const PlanProbe& p) { return summary(p.size == 2 ? 2.1 : 3.0); }};
  PlanSearchResult r = search_plan(options(6, {ttft_target(2.0)}, {1, 2}), fake.evaluator());
  EXPECT_EQ(fake.sizes_with_seed(1), (std::vector<size_t>{2, 4, 5}));
  EXPECT_FALSE(r.choices[0].chosen);
  EXPECT_EQ(r.choices[0].closest, 2u);
  EXPECT_EQ(r.choices[0].point(2)->seeds, (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(r.steps.back(), "  only at s2 is the closest to the targets so far: run with every seed");
}

TEST(PlanSearch, AMissingFigureFails) {
  Fake fake{[](const PlanProbe& p) {
    return p.size == 0 ? nlohmann::json{{"ttft_s", nullptr}} : summary(1.0);
  }};
  PlanSearchResult r = search_plan(options(3, {ttft_target(2.0)}), fake.evaluator());
  EXPECT_EQ(r.choices[0].chosen, 1u);
  EXPECT_TRUE(std::isnan(r.choices[0].point(0)->mean[0]));
  EXPECT_TRUE(std::isinf(shortfall(ttft_target(2.0), r.choices[0].point(0)->mean[0])));
}

TEST(PlanSearch, TheObjectivePicksTheSmallestOrTheCheapestChoice) {
  PlanSearchResult r;
  r.choices.resize(3);
  r.choices[0].chosen = 3;
  r.choices[1].chosen = 2;  // smaller, but dearer
  const std::vector<std::vector<std::optional<double>>> usd = {{1, 2, 3, 4}, {10, 20, 30, 40}, {1, 2, 3, 4}};
  EXPECT_EQ(recommended_choice(r, PlanObjective::kLeastSize, usd), 1u);
  EXPECT_EQ(recommended_choice(r, PlanObjective::kLeastCost, usd), 0u);
  r.choices[0].chosen.reset();
  r.choices[1].chosen.reset();
  EXPECT_FALSE(recommended_choice(r, PlanObjective::kLeastSize, usd));
}

TEST(PlanSearch, SummaryFiguresByDottedName) {
  nlohmann::json s = {
      {"ttft_s", {{"p95", 1.5}}}, {"ttft_parts_s", {{"queue", 0.25}}}, {"hit_rate_total", 0.5}};
  EXPECT_DOUBLE_EQ(summary_figure(s, "ttft_s.p95"), 1.5);
  EXPECT_DOUBLE_EQ(summary_figure(s, "ttft_parts_s.queue"), 0.25);
  EXPECT_DOUBLE_EQ(summary_figure(s, "hit_rate_total"), 0.5);
  EXPECT_TRUE(std::isnan(summary_figure(s, "ttft_s.p99")));
  EXPECT_TRUE(std::isnan(summary_figure(s, "tpot_s.p95")));
}

}  // namespace
}  // namespace kvtier
