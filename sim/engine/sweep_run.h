// Running a sweep's points (sweep_file.h): every point checked before any runs, then each point's variants
// simulated in child processes (isolated_run.h), several at once, and each point's result written to
// its own file as soon as its last variant is done, so that an interrupted sweep keeps every point it
// finished and a rerun skips them.
#pragma once

#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/core/config.h"
#include "sim/engine/preflight.h"
#include "sim/engine/scenario.h"
#include "sim/engine/sweep_file.h"

namespace kvtier {

struct PlannedPoint {
  SweepPoint point;
  std::vector<ScenarioRun> runs;  // the scenario's variants at this point
};

// plan_runs() and preflight() on every point: a bad key or value fails here, located, before anything runs.
std::vector<PlannedPoint> plan_sweep(const SweepFile& sweep, const ConfigNode& scenario,
                                     const PreflightOptions& checks);

// points/<id>.json in a sweep's folder.
std::filesystem::path point_file(const std::filesystem::path& points_dir, const std::string& id);

// What a point's file holds: {"id", "point", "index", "seed", "values" (per swept key), "variants": [{"name",
// "summary"}]}; the seed is the one its runs used (the scenario's own where the sweep gives none).
nlohmann::json point_result(const PlannedPoint& planned, const std::vector<nlohmann::json>& summaries);

struct SweepRunOptions {
  std::filesystem::path points_dir;
  int jobs = 1;                      // simulations at once
  std::filesystem::path runs_dir;    // --keep-runs: each point's CSVs in <runs_dir>/<id>/<variant>; empty: none
  std::function<void(size_t points_done)> on_point_done;  // in the calling process, after each point's file
};

// Simulates `points` and writes each one's file (a temporary file renamed into place). Throws Interrupted
// (isolated_run.h) when a termination signal comes, after the children are gone; the files already
// written stay.
void run_sweep_points(const std::vector<const PlannedPoint*>& points, const SweepRunOptions& options);

}  // namespace kvtier
