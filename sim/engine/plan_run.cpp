#include "sim/engine/plan_run.h"

#include <algorithm>

#include "sim/core/config_files.h"
#include "sim/engine/isolated_run.h"
#include "sim/engine/run_cost.h"
#include "sim/engine/simulation.h"

namespace kvtier {
namespace {

// The chosen variant's set: as overrides located in the scenario file, or none.
std::vector<Override> variant_overrides(const PlanFile& plan, const ConfigNode& scenario) {
  if (plan.variant.empty()) return {};
  std::vector<Variant> variants = parse_variants(scenario);
  std::vector<std::string> names;
  for (const Variant& v : variants) {
    names.push_back(v.name);
    if (v.name != plan.variant) continue;
    std::vector<Override> overrides;
    for (const auto& [path, value] : v.overrides) {
      overrides.push_back({path, value, plan.scenario + ": variants." + v.name + ".set." + path});
    }
    return overrides;
  }
  std::string listed;
  for (const std::string& n : names) listed += std::string(listed.empty() ? "" : ", ") + n;
  std::string near = closest_match(plan.variant, names);
  throw ConfigError(plan.variant_where + ": expected a variant of " + plan.scenario + " (" + listed +
                    "), got '" + plan.variant + "'" +
                    (near.empty() ? "" : " (did you mean '" + near + "'?)"));
}

ScenarioRun plan_one(const PreparedPlan& prepared, const PlanProbe& probe) {
  std::vector<ScenarioRun> runs = plan_runs(prepared.scenario, probe_overrides(prepared, probe));
  return std::move(runs.at(0));
}

}  // namespace

std::vector<Override> probe_overrides(const PreparedPlan& prepared, const PlanProbe& probe) {
  const PlanFile& plan = prepared.plan;
  std::vector<Override> overrides = prepared.variant;
  if (prepared.scenario.has("variants")) {
    overrides.push_back({"variants", "null", "the plan's scenario (a plan runs one variant)"});
  }
  overrides.insert(overrides.end(), plan.fixed.begin(), plan.fixed.end());
  const PlanChoice& choice = plan.choices.at(probe.choice);
  overrides.insert(overrides.end(), choice.overrides.begin(), choice.overrides.end());
  overrides.push_back(plan.menu.at(probe.size));
  overrides.push_back({"seed", std::to_string(probe.seed), "seeds: " + std::to_string(probe.seed)});
  return overrides;
}

PreparedPlan prepare_plan(const PlanFile& plan, const PreflightOptions& checks) {
  PreparedPlan prepared{plan, load_config(plan.scenario, "configs/scenarios"), "", {}, plan.seeds, {}, {}};
  prepared.scenario_name = prepared.scenario.string("name");
  prepared.variant = variant_overrides(plan, prepared.scenario);
  if (prepared.seeds.empty()) {
    // The scenario's own seed, as the plan's overrides leave it.
    std::vector<Override> overrides = prepared.variant;
    if (prepared.scenario.has("variants")) overrides.push_back({"variants", "null", "the plan's scenario"});
    overrides.insert(overrides.end(), plan.fixed.begin(), plan.fixed.end());
    prepared.seeds.push_back(plan_runs(prepared.scenario, overrides).at(0).scenario.seed);
  }
  for (size_t c = 0; c < plan.choices.size(); ++c) {
    prepared.usd_per_hour.emplace_back();
    for (size_t s = 0; s < plan.menu.size(); ++s) {
      ScenarioRun run = plan_one(prepared, {c, s, prepared.seeds[0]});
      preflight(run.scenario, checks);
      for (const std::string& w : run.scenario.warnings) {
        if (std::find(prepared.warnings.begin(), prepared.warnings.end(), w) == prepared.warnings.end()) {
          prepared.warnings.push_back(w);
        }
      }
      std::optional<double> price;
      if (run.scenario.cost) price = usd_per_hour(run.scenario, *run.scenario.cost);
      if (!price && plan.objective == PlanObjective::kLeastCost) {
        throw ConfigError(plan.objective_where +
                          ": least_cost needs the price of each run, but the scenario " + plan.scenario +
                          " names no cost file (add `cost: NAME` to it, or cost: NAME under set:)");
      }
      prepared.usd_per_hour.back().push_back(price);
    }
  }
  return prepared;
}

PlanEvaluator isolated_plan_evaluator(const PreparedPlan& prepared, int jobs) {
  return [&prepared, jobs](const std::vector<PlanProbe>& probes) {
    std::vector<ScenarioRun> runs;
    for (const PlanProbe& p : probes) runs.push_back(plan_one(prepared, p));
    std::vector<Simulation> simulations;
    for (const ScenarioRun& run : runs) {
      simulations.push_back([&run] { return simulate(run.scenario, SimulationOptions{}); });
    }
    return run_isolated(simulations, jobs);
  };
}

}  // namespace kvtier
