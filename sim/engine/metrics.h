// What a serving simulation measures: one record per request, samples over time, and the summary
// (latency percentiles, goodput under SLOs, hit rate per tier, recomputed tokens, bytes per link).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "sim/cache/tiered_cache.h"
#include "sim/core/quantiles.h"
#include "sim/serving/request_record.h"
#include "sim/serving/scheduler.h"

namespace kvtier {

struct TimeSample {
  double time_s = 0;
  double hbm_used_bytes = 0;
  double hbm_cache_bytes = 0;  // cached, unpinned prefix blocks
  int64_t queued = 0;
  int64_t running = 0;
  // Per link of the node, its mean utilisation over the interval ending at time_s, in [0, 1]: the bytes it
  // carried over what its bandwidth allows (the simulator), or the time copies crossing it ran over the
  // interval (kvtier-hw serve).
  std::vector<double> link_utilisation;
  std::vector<double> tier_hit_rate;  // over the requests admitted since the previous sample
};

struct Slo {
  double ttft_s = 2.0;
  double tpot_s = 0.1;
};

// A request's time to first token in parts that add up to it: queueing until its (last) admission; the
// steps that ran its prefill chunks, their compute and their conversion; the wait for its load, per tier;
// and the rest (waiting for a step to end or to take it, and behind copies). A part is capped at what the
// parts before it leave, so that they never add up to more than the TTFT: with layer-wise overlap a load
// runs during the prefill, and only what it adds after the prefill counts as load.
struct TtftParts {
  double queue_s = 0;
  double prefill_s = 0;
  double conversion_s = 0;
  std::vector<double> load_s;  // per tier, tier 0's 0
  double other_s = 0;
};
// REQUIRES: the request has a first token.
TtftParts ttft_parts(const RequestRecord& r);
// The names of a summary's ttft_parts_s in the order the parts are taken: queue, load_<tier> per lower
// tier, conversion, prefill, other (a JSON object read back keeps its keys sorted instead).
std::vector<std::string> ttft_part_names(const nlohmann::json& parts);

// A latency's p50, p95, p99 and mean as summary.json gives them; null when there is none.
nlohmann::json percentiles(LatencyQuantiles& values);

// The summary of a run's requests, added one at a time as each is final (request_log.h), in arrival
// order: counts and sums as they come, latencies in LatencyQuantiles (exact up to a million requests, a
// sketch within 0.1 % beyond: sim/core/quantiles.h), so that its memory does not grow with the run.
// A request completed inside the window when it completed by `window_s`.
class RequestSummary {
 public:
  RequestSummary(std::vector<std::string> tier_names, const Slo& slo, double window_s);
  void add(const RequestRecord& r);
  int64_t requests_added() const { return issued_; }
  int64_t requests_completed() const { return completed_; }
  // Every figure of the summary, for summary.json and --format json. Goodput counts the requests that
  // completed inside the window and met both SLOs; requests_completed_in_window is the AMD seed's goodput
  // (every request completed inside the window), requests_completed_after_window the completions after
  // it. ttft_parts_s holds the mean of each TTFT part over the requests with a first token. Where the
  // latencies were sketched, quantile_relative_error states the bound. window_s is the one given here.
  nlohmann::json to_json(const std::vector<std::string>& link_names, const std::vector<double>& link_bytes);

 private:
  std::vector<std::string> tier_names_;
  Slo slo_;
  double window_s_;
  LatencyQuantiles ttft_, tpot_, e2e_;
  int64_t issued_ = 0, completed_ = 0, good_ = 0, input_tokens_ = 0, recomputed_ = 0, preemptions_ = 0,
          rejected_ = 0;
  int64_t in_window_ = 0, tokens_in_window_ = 0, good_tokens_ = 0;
  std::vector<int64_t> hits_;
  TtftParts parts_sum_;  // over the requests with a first token
};

// A RequestSummary of every record at once.
nlohmann::json summarise(const std::vector<RequestRecord>& records,
                         const std::vector<std::string>& tier_names,
                         const std::vector<std::string>& link_names, const std::vector<double>& link_bytes,
                         const Slo& slo, double window_s);

// A sample of the serving state at `time_s`, as both engines take it: HBM use, queue and batch, and the
// hit rate per tier of the requests admitted since the previous sample (whose counters in `state` it
// resets). The engine fills in link_utilisation.
TimeSample sample_state(double time_s, const TieredCache& cache, SchedulerState& state);

// Every non-empty flow of the cache's events (summary.json's cache_traffic): what moved between which
// tiers, in each tier's layout.
nlohmann::json cache_traffic_json(const TieredCache& cache);
// The same of totals (a cluster's caches added up), with the tiers' names.
nlohmann::json cache_traffic_json(const TrafficTotals& totals, const std::vector<std::string>& tier_names);

// requests.csv, a row per request as it is written: the header at construction.
class RequestsCsvWriter {
 public:
  // The router's decisions in a cluster, in last columns: `instance`, the instance it sent the request to
  // (the decode instance with disaggregation), and with disaggregation `prefill_instance` and `handoff_s`
  // (from the prefill's first token to the KV landing on the decode instance; -1 when it never did).
  enum class RouteColumns { kNone, kInstance, kHandoff };
  RequestsCsvWriter(std::ostream& out, std::vector<std::string> tier_names,
                    RouteColumns route_columns = RouteColumns::kNone);
  void write(const RequestRecord& r, int instance = -1, int prefill_instance = -1);

 private:
  std::ostream& out_;
  std::vector<std::string> tier_names_;
  RouteColumns route_columns_;
  std::string row_;  // the row being built, its buffer kept
};

void write_requests_csv(std::ostream& out, const std::vector<RequestRecord>& records,
                        const std::vector<std::string>& tier_names);
// timeseries.csv, a row per sample as it is taken: the header at construction.
class TimeseriesCsvWriter {
 public:
  TimeseriesCsvWriter(std::ostream& out, const std::vector<std::string>& link_names,
                      const std::vector<std::string>& tier_names);
  void write(const TimeSample& s);

 private:
  std::ostream& out_;
  std::string row_;
};

void write_timeseries_csv(std::ostream& out, const std::vector<TimeSample>& samples,
                          const std::vector<std::string>& link_names,
                          const std::vector<std::string>& tier_names);

}  // namespace kvtier
