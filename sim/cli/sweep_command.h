// What `kvtier sweep` and `kvtier simulate --sweep` share: the sweep's folder (resumed when it holds the
// same sweep, refused when it holds another), the runs of this shard's unfinished points with a progress
// line, and the folder's tables and plot; and `kvtier sweep merge`. docs/sweep.md describes the folder.
#pragma once

#include <string>
#include <vector>

#include "sim/cli/output.h"
#include "sim/engine/sweep_file.h"

namespace kvtier {

struct SweepCommandOptions {
  std::string out;                    // default: <runs folder>/<default_name>
  std::string shard;                  // "i/N", or "" for every point
  int jobs = 0;                       // simulations at once; 0: one per core
  std::string metric = "ttft_s.p95";  // a column of sweep.csv, for the plot (and the table)
  bool keep_runs = false;
  bool quiet = false;
  bool no_plots = false;
  bool allow_huge = false;
  OutputFormat format = OutputFormat::kTable;
};

void run_sweep_command(const SweepFile& sweep, const std::string& default_name, const SweepCommandOptions& options);

// Combines the folders of a sweep's shards into `out`, byte for byte what one unsharded run writes; refuses
// folders of different sweeps, and a point that none or two of them hold.
void merge_sweep_folders(const std::vector<std::string>& dirs, const SweepCommandOptions& options);

}  // namespace kvtier
