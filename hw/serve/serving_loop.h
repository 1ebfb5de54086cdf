// kvtier-hw serve's engine: one scenario run for real on one GPU, with the simulator's scheduler.
//
// The same Scheduler that the simulator drives on SimGrid's clock (sim/serving/scheduler.h) makes every
// decision here; what differs is how time passes. Requests arrive on the wall clock (open loop from trace
// timestamps, or closed-loop sessions, as the scenario's workload says), each planned step runs as a real
// forward pass of the model's exact shapes with random weights (hw/model/forward.h) over the KV pages the
// tiered store holds, and the store makes the cache model's copies between HBM, pinned DRAM and an NVMe
// file (store_backend.h). The outputs are the simulator's: one record per request, samples over time, the
// transfers, and a summary with the same keys, so that `kvtier validate` compares the two.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hw/serve/step_log.h"
#include "sim/core/transfer_log.h"
#include "sim/engine/metrics.h"
#include "sim/engine/scenario.h"

namespace kvtier::hw {

struct ServeOptions {
  std::string nvme_directory = ".";  // where the NVMe tier's store file is created (and removed after)
  int warmup_steps = 3;              // forward passes before the clock starts, so no step pays first-call setup
};

struct ServeRun {
  std::vector<RequestRecord> records;
  std::vector<TimeSample> samples;
  std::vector<TransferRecord> transfers;
  std::vector<StepRecord> steps;
  std::vector<std::string> tier_names;
  // The node's links (sim/core/node_links.h), as the simulator names them.
  std::vector<std::string> link_names;
  nlohmann::json summary;  // summarise()'s keys, and the run's own (steps, compute, device)
};

// Throws ConfigError for what the hardware mode cannot serve (a remote tier, tiers of different layouts,
// a model whose forward pass is not built), StoreError or gpu::GpuError when the machine fails.
ServeRun serve_scenario(const Scenario& scenario, const ServeOptions& options);

}  // namespace kvtier::hw
