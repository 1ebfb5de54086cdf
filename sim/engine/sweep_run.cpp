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

namespace {

// Renamed into place whole: a reader (or a rerun) sees the complete file or none.
void write_point_file(const std::filesystem::path& points_dir, const nlohmann::json& result) {
  std::string id = result["id"];
  std::filesystem::path temporary = points_dir / ("." + id + ".json.tmp");
  write_checked_file(temporary, result.dump(2) + "\n");
  std::filesystem::rename(temporary, point_file(points_dir, id));
}

}  // namespace

void run_sweep_points(const std::vector<const PlannedPoint*>& points, const SweepRunOptions& options) {
  std::vector<Simulation> simulations;
  std::vector<size_t> owner;  // the point of each simulation
  for (size_t p = 0; p < points.size(); ++p) {
    for (const ScenarioRun& run : points[p]->runs) {
      SimulationOptions sim;
      if (!options.runs_dir.empty()) sim.out_dir = (options.runs_dir / points[p]->point.id / run.name).string();
      simulations.push_back([&run, sim] { return simulate(run.scenario, sim); });
      owner.push_back(p);
    }
  }
  std::vector<std::vector<nlohmann::json>> summaries(points.size());
  std::vector<size_t> missing(points.size());
  for (size_t p = 0; p < points.size(); ++p) {
    summaries[p].resize(points[p]->runs.size());
    missing[p] = points[p]->runs.size();
  }
  std::vector<size_t> first(points.size());  // index of each point's first simulation
  for (size_t s = simulations.size(); s-- > 0;) first[owner[s]] = s;
  size_t done = 0;
  run_isolated(simulations, options.jobs, [&](size_t s, const nlohmann::json& summary) {
    size_t p = owner[s];
    summaries[p][s - first[p]] = summary;
    if (--missing[p] > 0) return;
    write_point_file(options.points_dir, point_result(*points[p], summaries[p]));
    if (options.on_point_done) options.on_point_done(++done);
  });
}

}  // namespace kvtier
