// The search of a capacity plan (plan_file.h), apart from how a point is simulated, so that it can be
// tested on a function with a known answer.
//
// For each choice, a bisection over the size menu finds the smallest size at which one run (the first
// seed) meets every target, assuming that a larger size never hurts. With `parallel` runs at once, a round
// probes every unfinished choice, and each choice several evenly spaced sizes of its open interval when
// the runs allow it (a k-ary search). Then the answer is confirmed with every seed: the chosen size must
// meet every target in the mean over the seeds, and the next smaller size (the binding evidence) must
// miss one; where the seeds disagree with the first seed's run, the answer moves one menu entry at a time
// until both hold. A choice with no answer is judged by its closest point, which is run with every seed
// too. Every point run is kept (the frontier), and pairs of points where a smaller size passes and a
// larger one fails are reported as non-monotone.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "sim/engine/plan_file.h"

namespace kvtier {

// One simulation the search asks for: a choice at a menu entry with a seed.
struct PlanProbe {
  size_t choice = 0;
  size_t size = 0;
  uint64_t seed = 0;
};

// Simulates the probes (in parallel where it can) and returns each one's summary (metrics.h), in order.
using PlanEvaluator = std::function<std::vector<nlohmann::json>(const std::vector<PlanProbe>&)>;

struct PlanSearchOptions {
  std::vector<PlanTarget> targets;
  std::vector<std::string> choices;                      // names
  std::vector<std::string> sizes;                        // the menu in the search's order
  PlanDirection direction;                               // what the search looks for, in words
  std::vector<uint64_t> seeds;                           // non-empty; the first is the bisection's
  size_t parallel = 1;                                   // simulations the evaluator runs at once
  std::function<void(const std::string& line)> on_step;  // each line of the reasoning as it happens
};

// One choice at one menu entry, with the seeds it ran.
struct PlanPoint {
  size_t size = 0;
  std::vector<uint64_t> seeds;
  std::vector<nlohmann::json> summaries;  // per seed
  std::vector<double> mean;   // per target: the mean over the seeds (NaN where a run lacks the figure)
  std::vector<double> worst;  // per target: the worst seed's
  bool pass = false;          // every target met by the mean
};

struct ChoiceOutcome {
  std::vector<PlanPoint> points;  // every point run, by size
  std::optional<size_t> chosen;   // the menu index of the answer: the smallest confirmed size
  std::optional<size_t> binding;  // the next smaller menu entry, run with every seed, which misses a target
  std::optional<size_t> closest;  // with no answer: the menu index whose worst target is missed by least
  std::vector<std::string> non_monotone;  // "256GiB meets every target but 512GiB misses ttft_p95"

  const PlanPoint* point(size_t size) const;  // null when not run
};

struct PlanSearchResult {
  std::vector<ChoiceOutcome> choices;
  std::vector<std::string> steps;  // the reasoning, as on_step saw it
  size_t simulations = 0;
  size_t rounds = 0;  // calls of the evaluator
};

PlanSearchResult search_plan(const PlanSearchOptions& options, const PlanEvaluator& evaluate);

// A target's figure in a summary by its dotted name ("ttft_s.p95"), or NaN when absent or null.
double summary_figure(const nlohmann::json& summary, const std::string& dotted);
// Whether `value` meets the target (NaN never does).
bool meets(const PlanTarget& target, double value);
// How far `value` is from the target, relative to its limit: 0 when met, 0.5 for a TTFT 50 % over its limit
// or a hit rate half of it; infinity for NaN.
double shortfall(const PlanTarget& target, double value);
// "1.52 s" for latencies, "0.63" for the hit rate.
std::string format_target_value(const PlanTarget& target, double value);
// How a figure misses its target: "2.91 s > 2.00 s", "0.41 < 0.50".
std::string miss_comparison(const PlanTarget& target, double value);
// The largest shortfall of a point's mean figures over the targets (0 when it meets them all).
double worst_shortfall(const std::vector<PlanTarget>& targets, const PlanPoint& point);
// "1,2,3"
std::string seed_list_text(const std::vector<uint64_t>& seeds);
// The mean over a point's seeds of any figure of its summaries (NaN where none has it).
double mean_figure(const PlanPoint& point, const std::string& dotted);

// The choice the objective picks among those with an answer: the smallest menu index (least_size; ties go
// to the cheaper, then the first), or the lowest price per hour (least_cost; `usd_per_hour[c][size]`).
std::optional<size_t> recommended_choice(const PlanSearchResult& result, PlanObjective objective,
                                         const std::vector<std::vector<std::optional<double>>>& usd_per_hour);

}  // namespace kvtier
