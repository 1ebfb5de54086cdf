// A simulation compared with a hardware run of the same scenario and trace: requests matched by id, the
// relative error (predicted - measured) / measured of each request's TTFT, TPOT and end-to-end time, the
// percentiles of each on both sides, requests completed in the window, hit tokens per tier and bytes per
// link (which must be equal: the cache decisions do not depend on timing), and, from transfers.csv, the
// bytes (equal too) and the time of each transfer path. Each target of `Targets` becomes a Check: passed, missed, or not compared (with the reason).
// No SimGrid and no CLI here: `kvtier validate` prints and plots what compare_runs() returns.
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "validate/compare/run_folder.h"

namespace kvtier::validation {

// Limits on |relative error|, as fractions. The defaults are the H200 targets.
struct Targets {
  double ttft_percentile_error = 0.05;       // TTFT p50 and p95, each
  double ttft_percentile_goal = 0.03;        // reported beside the p50 and p95 checks; never fails a run
  double ttft_request_median_error = 0.10;   // median over requests of |TTFT error|
  double completed_error = 0.02;             // requests completed inside the window
  double transfer_time_median_error = 0.03;  // per path, median over transfers of |time error|
};

enum class Verdict { kPassed, kMissed, kNotCompared };
const char* verdict_name(Verdict verdict);  // "passed", "missed", "not compared"

struct Check {
  std::string name;  // ttft_p50, ttft_p95, ttft_request_median, requests_completed, hit_tokens, link_bytes,
                     // transfer_time, transfer_bytes
  Verdict verdict = Verdict::kNotCompared;
  std::optional<double> value;  // the |error| held against the limit, where there is one
  std::optional<double> limit;
  std::optional<double> goal;
  std::string detail;  // the numbers or the reason, in words
};

enum Metric { kTtft, kTpot, kE2e, kMetricCount };
const char* metric_name(Metric metric);  // "ttft_s", "tpot_s", "e2e_s"

struct Percentiles {
  double p50 = 0, p95 = 0, p99 = 0;
};

struct MetricComparison {
  size_t predicted_count = 0, measured_count = 0;  // requests where the metric is defined, per side
  std::optional<Percentiles> predicted, measured;
  std::optional<Percentiles> error;  // relative error of each percentile (absent when a side has none)
  size_t paired = 0;                 // requests defined on both sides, with a positive measured value
  std::optional<double> median_error, median_abs_error, p95_abs_error;  // over the paired requests
};

// One request on both sides; absent where the metric is undefined on that side.
struct RequestComparison {
  uint64_t id = 0;
  std::array<std::optional<double>, kMetricCount> predicted, measured;
};

struct TierHits {
  std::string tier;
  int64_t predicted = 0, measured = 0;
};

struct LinkComparison {
  std::string link;
  double predicted = 0, measured = 0;  // a link missing from one run's summary counts as 0 bytes there
};

struct PathTransfers {
  std::string path;
  size_t predicted_count = 0, measured_count = 0;
  double predicted_seconds = 0, measured_seconds = 0;  // summed over the path's transfers
  double predicted_bytes = 0, measured_bytes = 0;      // summed over the path's transfers
  size_t paired = 0;  // matched (by request, or by order) with a positive measured time
  std::optional<double> median_abs_error;
};

struct VariantComparison {
  std::string name;
  std::array<MetricComparison, kMetricCount> metrics;
  int64_t predicted_completed = 0, measured_completed = 0;  // inside each run's window
  std::vector<TierHits> hits;
  std::vector<LinkComparison> links;
  std::optional<std::vector<PathTransfers>> transfers;  // absent: a run has no transfers.csv
  bool transfers_by_request = false;                    // paired by request: both files name requests
  bool cache_at_measured_arrivals = false;              // hits, links and transfers predicted by the replay
  std::vector<RequestComparison> requests;              // predicted run's order
  std::vector<Check> checks;
};

struct Comparison {
  std::string predicted_dir, measured_dir;
  Targets targets;
  std::vector<VariantComparison> variants;

  // "variant: check" for every missed check.
  std::vector<std::string> missed() const;
};

// Throws ConfigError when the runs cannot be compared: different variants, request ids, tiers, or token
// counts for a request (they did not replay the same scenario and trace).
//
// A closed loop's hits and bytes depend on the order in which its turns were issued, and that order on
// the timing: a prediction a few percent off issues the sessions' turns in another order and makes other
// (equally right) placements. `cache_replay`, when given, is the prediction's replay at the measured
// run's arrivals (make_recorded_closed_loop): the same turns in the same order, so that its hit tokens,
// bytes per link and transfers must equal the measurement's; they are compared from it, and the timing
// from `predicted`.
Comparison compare_runs(const RunFolder& predicted, const RunFolder& measured, const Targets& targets,
                        const RunFolder* cache_replay = nullptr);

nlohmann::json to_json(const Comparison& comparison);

// id, then predicted, measured and error of each metric; cells empty where undefined.
void write_request_errors_csv(std::ostream& out, const VariantComparison& variant);

}  // namespace kvtier::validation
