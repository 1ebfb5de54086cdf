// The scenario's `workload` section turned into a replay driver.
//
//   loop: closed | open
//   source: agent | trace
//   agent: <built-in generator name or an inline generator mapping>   (source: agent)
//   trace: <file>, format: mooncake | bailian | native, skip_bad_lines   (source: trace)
//   sessions: N, duration: 20min          (closed loop: sessions in flight, window)
//   rate: 1.0, duration, requests: N      (open loop: rate multiplier, window, generated request count)
// Block ids come out in the scenario's block size.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/engine/scenario.h"
#include "sim/workload/replay.h"

namespace kvtier {

struct WorkloadPlan {
  std::unique_ptr<ReplayDriver> driver;
  double window_s = 0;  // goodput counts completions inside it; infinity for an open trace
  std::string description;
  std::optional<int64_t> requests;  // how many the workload issues, where that is known before the run
};

// Reads and checks every key of the scenario's workload without opening a trace or generating a session
// (the parent process's check before the simulation runs); returns its kind, "loop: closed, source:
// agent". Throws ConfigError located at the key.
std::string validate_workload(const Scenario& scenario);
// validate_workload(), then the driver: opens the trace or starts the generator.
WorkloadPlan build_workload(const Scenario& scenario);
// Whether the workload is a closed loop (validate_workload's checks first).
bool is_closed_loop(const Scenario& scenario);
// A closed loop's sessions issued at the recorded times instead of after each answer
// (make_recorded_closed_loop), in the loop's window. Throws ConfigError for an open loop.
WorkloadPlan build_recorded_workload(const Scenario& scenario, std::vector<RecordedTurn> arrivals);

}  // namespace kvtier
