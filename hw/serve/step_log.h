// steps.csv: one row per engine step of a hardware serving run, what it ran and how long it took, beside
// the time the run's cost model gives the same step. A served scenario's TTFT error mixes the cost model's
// error with the schedule's (which request ran beside which); this file separates them: the cost model
// priced on exactly the work the GPU ran.
//
//   start_s,forward_s,end_s,predicted_s,decodes,decode_context_tokens,prefills,prefill_tokens,
//   prefill_context_tokens,decode_contexts,prefill_chunks
//
// start_s is when the step began on the run's clock (its requests.csv clock), forward_s what the forward
// pass took on the host clock, end_s when the scheduler had taken the step in (so end_s - start_s -
// forward_s is the serving loop's own time per step); predicted_s is the plan's compute_s, the run's cost
// model (with a calibration when the scenario names one) for the step's work. The last two columns list
// the work itself, space-separated: each decode's context in tokens, and each prefill chunk as
// `start:tokens` (tokens whose KV exists before it, tokens it computes).
#pragma once

#include <ostream>
#include <vector>

#include "sim/serving/step_plan.h"

namespace kvtier::hw {

inline constexpr const char* kStepsFile = "steps.csv";

struct StepRecord {
  double start_s = 0;
  double forward_s = 0;
  double end_s = 0;
  StepPlan plan;
};

void write_steps_csv(std::ostream& out, const std::vector<StepRecord>& steps);

}  // namespace kvtier::hw
