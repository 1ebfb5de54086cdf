#include "sim/engine/sweep_run.h"

#include "sim/core/checked_file.h"
#include "sim/engine/isolated_run.h"
#include "sim/engine/simulation.h"

namespace kvtier {

std::vector<PlannedPoint> plan_sweep(const SweepFile& sweep, const ConfigNode& scenario,
                                     const PreflightOptions& checks) {
  std::vector<PlannedPoint> planned;
  for (SweepPoint& point : expand_sweep(sweep)) {
    std::vector<ScenarioRun> runs = plan_runs(scenario, point_overrides(sweep, point));
    for (const ScenarioRun& run : runs) preflight(run.scenario, checks);
    planned.push_back({std::move(point), std::move(runs)});
  }
  return planned;
}

std::filesystem::path point_file(const std::filesystem::path& points_dir, const std::string& id) {
  return points_dir / (id + ".json");
}

nlohmann::json point_result(const PlannedPoint& planned, const std::vector<nlohmann::json>& summaries) {
  const SweepPoint& p = planned.point;
  nlohmann::json values = nlohmann::json::array();
  for (const Override& v : p.values) values.push_back(v.value);
  nlohmann::json variants = nlohmann::json::array();
  for (size_t i = 0; i < planned.runs.size(); ++i) {
    variants.push_back({{"name", planned.runs[i].name}, {"summary", summaries[i]}});
  }
  return {{"id", p.id}, {"point", p.id.substr(0, p.id.find('-'))}, {"index", p.index},
          {"seed", planned.runs[0].scenario.seed}, {"values", values}, {"variants", variants}};
}

void run_sweep_points(const std::vector<const PlannedPoint*>& points, const SweepRunOptions& options) {
  std::vector<Simulation> simulations;
  std::vector<std::pair<size_t, size_t>> slots;  // each simulation's point and variant
  std::vector<std::vector<nlohmann::json>> summaries(points.size());
  std::vector<size_t> missing(points.size());  // variants of each point still running
  for (size_t p = 0; p < points.size(); ++p) {
    const std::vector<ScenarioRun>& runs = points[p]->runs;
    for (size_t v = 0; v < runs.size(); ++v) {
      SimulationOptions sim;
      if (!options.runs_dir.empty()) sim.out_dir = (options.runs_dir / points[p]->point.id / runs[v].name).string();
      simulations.push_back([&run = runs[v], sim] { return simulate(run.scenario, sim); });
      slots.emplace_back(p, v);
    }
    summaries[p].resize(runs.size());
    missing[p] = runs.size();
  }
  size_t done = 0;
  run_isolated(simulations, options.jobs, [&](size_t s, const nlohmann::json& summary) {
    auto [p, v] = slots[s];
    summaries[p][v] = summary;
    if (--missing[p] > 0) return;
    // Whole or not at all: a rerun sees the complete file or none.
    replace_checked_file(point_file(options.points_dir, points[p]->point.id),
                         point_result(*points[p], summaries[p]).dump(2) + "\n");
    if (options.on_point_done) options.on_point_done(++done);
  });
}

}  // namespace kvtier
