// What a run costs and the energy it takes, from the scenario's cost file (sim/core/cost_file.h) and what
// the run did. The run is charged for its window (the workload's fixed window, or the simulated time when
// that is shorter):
//   price   the instance's GPUs at their hourly price, plus the DRAM and NVMe tiers' capacity at their
//           monthly price per GB (a month is 730 hours); a remote tier is not priced;
//   energy  each GPU at its idle power plus (busy − idle) × the share of the window it ran steps; the
//           host's power in the instance's share of the node's GPUs; DRAM at its power per TB of the DRAM
//           tiers; with an NVMe tier, every drive of the node (the simulator stripes over all of them) at
//           its idle power plus (active − idle) × the share of the window the NVMe links were busy.
// A cluster (scenario.h, `cluster:`) is charged for every replica's GPUs, host share and tiers, its pool as
// DRAM, and every node's drives; its GPUs' busy share is the replicas' mean, and the drives' the nodes'.
// Figures per token count the input and output tokens of the requests that completed inside the window:
// all of them for tokens per joule, those that also met both SLOs for the price per million tokens.
#pragma once

#include <nlohmann/json.hpp>

#include "sim/core/cost_file.h"
#include "sim/engine/scenario.h"

namespace kvtier {

struct RunUsage {
  double window_s = 0;
  double gpu_busy_s = 0;  // time the instance ran steps, inside the window (a cluster's replicas' summed)
  double nvme_read_bytes = 0;  // every node's
  double nvme_write_bytes = 0;
  int64_t tokens_in_window = 0;  // input + output tokens of the requests completed in the window
  int64_t tokens_in_slo = 0;     // of those, the requests that met both SLOs
};

// The scenario's price per hour: GPUs, DRAM and NVMe tiers, as above.
double usd_per_hour(const Scenario& scenario, const CostFile& cost);

// summary.json's `cost` object: the price and energy of the run, each split by component.
nlohmann::json run_cost_json(const Scenario& scenario, const CostFile& cost, const RunUsage& usage);

// summary.json's `sessions_fit`: per tier, how many sessions of `session_tokens` tokens its capacity holds
// at once, in whole blocks of the tier's layout.
nlohmann::json sessions_fit_json(const Scenario& scenario);

}  // namespace kvtier
