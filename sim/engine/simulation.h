// One serving simulation from start to finish: build the SimGrid engine and platform, the cache, the
// workload and the serving instance; run; summarise; write the per-request, time-series and transfer CSVs
// (requests.csv, timeseries.csv, transfers.csv) through CheckedFile, so a full disk is an error that names
// the file.
//
// A process can run one SimGrid engine, so callers run this through run_isolated() (isolated_run.h).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "sim/engine/progress.h"
#include "sim/engine/scenario.h"
#include "sim/workload/replay.h"

namespace kvtier {

struct SimulationOptions {
  std::string out_dir;          // the CSVs go here; empty writes nothing
  bool transfers_csv = true;    // with out_dir, also transfers.csv (one row per load and per stored block)
  bool free_transfers = false;  // every load and store takes no time (checks against the analytic mode)
  // A closed loop's turns issued at these times instead of after each answer (build_recorded_workload):
  // kvtier validate's replay of a hardware run's arrivals. Unset: the scenario's own workload.
  std::optional<std::vector<RecordedTurn>> recorded_arrivals;
  // Where to draw the run's progress line on stderr (progress.h); unset draws none.
  std::optional<ProgressRow> progress;
  // Every step and idle wait a SimGrid sleep, the instance keeping no clock of its own
  // (ServingInstance::run_alone): the reference that clock must match.
  bool simgrid_clock_only = false;
};

// Returns the run's summary (metrics.h) with the scenario's name, simulated time and event counts.
nlohmann::json simulate(const Scenario& scenario, const SimulationOptions& options);

}  // namespace kvtier
