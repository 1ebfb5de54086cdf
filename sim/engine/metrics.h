// What a serving simulation measures: one record per request, samples over time, and the summary
// (latency percentiles, goodput under SLOs, hit rate per tier, recomputed tokens, bytes per link).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "sim/cache/tiered_cache.h"
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

// Linear interpolation between closest ranks (numpy's default). REQUIRES: 0 <= q <= 1.
double percentile(std::vector<double> values, double q);

// Every figure of the summary, for summary.json and --format json. Goodput counts the requests that
// completed inside the window and met both SLOs; requests_completed_in_window is the AMD seed's goodput
// (every request completed inside the window), requests_completed_after_window the completions after it.
// ttft_parts_s holds the mean of each TTFT part over the requests with a first token.
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

void write_requests_csv(std::ostream& out, const std::vector<RequestRecord>& records,
                        const std::vector<std::string>& tier_names);
void write_timeseries_csv(std::ostream& out, const std::vector<TimeSample>& samples,
                          const std::vector<std::string>& link_names,
                          const std::vector<std::string>& tier_names);

}  // namespace kvtier
