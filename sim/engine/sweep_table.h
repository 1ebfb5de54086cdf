// A sweep's results as one tidy table: a row per point, variant and seed, with the point's swept values and
// every scalar metric of the variant's summary (metrics.h) flattened to a column. The columns come from the
// summaries themselves, so a figure added to summary.json appears here without a change to this code.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kvtier {

// The numbers and booleans of `summary`, by dotted name: objects by key ("ttft_s.p95"), a list's objects by
// their text fields ("hit_rate_tokens.dram.rate", "link_bytes.pcie_h2d_0.bytes"; by position where those
// are missing or repeat: "list.2.x"), in the summary's order. Text values are labels, not metrics: left out.
std::vector<std::pair<std::string, nlohmann::json>> flatten_metrics(const nlohmann::json& summary);

// sweep.json: {"sweep": the canonical sweep, "keys", "columns", "rows"}, from the result files of the points
// (sweep_run.h), taken in their order. Columns: point, the swept keys, seed, variant, then the metrics in
// the order they first appear.
nlohmann::json sweep_results(const nlohmann::json& sweep, const std::vector<std::string>& keys,
                             const std::vector<nlohmann::json>& points);

// sweep.csv: the rows of sweep_results() under its columns; a metric a row lacks is an empty cell.
std::string sweep_csv(const nlohmann::json& results);

// The printed table: one row per point and variant, each metric's mean over the point's seeds.
struct SweepMeans {
  std::string point;
  std::vector<std::string> values;  // per swept key
  std::string variant;
  size_t seeds = 0;
  std::vector<std::optional<double>> means;  // per metric; unset where no row has it
};
std::vector<SweepMeans> mean_over_seeds(const nlohmann::json& results, const std::vector<std::string>& metrics);

}  // namespace kvtier
