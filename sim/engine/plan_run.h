// Running a capacity plan (plan_file.h, plan_search.h) on the serving simulation: every choice at every
// menu size is checked (plan_runs, preflight) before anything runs, then the search's probes are simulated
// in forked children (isolated_run.h), `jobs` at once, as a sweep's points are.
#pragma once

#include <optional>
#include <vector>

#include "sim/core/config.h"
#include "sim/engine/plan_file.h"
#include "sim/engine/plan_search.h"
#include "sim/engine/preflight.h"
#include "sim/engine/scenario.h"

namespace kvtier {

struct PreparedPlan {
  PlanFile plan;
  ConfigNode scenario;            // the scenario file as loaded
  std::string scenario_name;      // its name: key
  std::vector<Override> variant;  // the chosen variant's set:, applied before the plan's overrides
  std::vector<uint64_t> seeds;    // the plan's, or the scenario's own seed alone
  std::vector<std::vector<std::optional<double>>> usd_per_hour;  // per choice and size, with a cost: file
  std::vector<std::string> warnings;                             // the scenario's, once each
};

// Loads the scenario and checks every choice at every size. Throws ConfigError located at the plan file's
// line (or the scenario's) before anything runs: a key nothing reads, a bad value, an unknown variant,
// least_cost without a cost: file, a run too large for the machine.
PreparedPlan prepare_plan(const PlanFile& plan, const PreflightOptions& checks);

// The overrides of one probe: the variant's, `variants: null` (one run), the plan's set:, the choice's,
// the size's and the seed.
std::vector<Override> probe_overrides(const PreparedPlan& prepared, const PlanProbe& probe);

// Simulates each probe in a child process, `jobs` at once.
PlanEvaluator isolated_plan_evaluator(const PreparedPlan& prepared, int jobs);

}  // namespace kvtier
