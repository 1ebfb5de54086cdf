// What a node costs to run and how much power it draws, from configs/costs/*.yaml: the price of a GPU-hour
// (the GPU's share of the node included), of DRAM and NVMe per GB and month, and the power of GPUs (busy
// and idle), the host, DRAM per TB and each NVMe drive (active and idle). A scenario names one with
// `cost:`; what a run costs and the energy it takes are worked out in sim/engine/run_cost.h.
#pragma once

#include <string>

#include "sim/core/config.h"

namespace kvtier {

struct CostFile {
  std::string name;
  double gpu_usd_per_hour = 0;
  double gpu_busy_w = 0;
  double gpu_idle_w = 0;
  double host_w = 0;  // per node: everything but its GPUs, DRAM and drives
  double dram_usd_per_gb_month = 0;
  double dram_w_per_tb = 0;
  double nvme_usd_per_gb_month = 0;
  double nvme_active_w = 0;  // per drive
  double nvme_idle_w = 0;    // per drive
};

// Every key is required. Throws ConfigError located at the key: a missing or unknown key, a price that is
// negative or not a number, a power without its unit, an idle power above the busy one.
CostFile parse_cost_file(const ConfigNode& root);

}  // namespace kvtier
