#include "sim/engine/metrics.h"

#include <algorithm>
#include <cmath>
#include <iomanip>

namespace kvtier {
namespace {

double mean(const std::vector<double>& values) {
  double sum = 0;
  for (double v : values) sum += v;
  return values.empty() ? 0 : sum / static_cast<double>(values.size());
}

nlohmann::json percentiles(const std::vector<double>& values) {
  if (values.empty()) return nullptr;
  return {{"p50", percentile(values, 0.50)},
          {"p95", percentile(values, 0.95)},
          {"p99", percentile(values, 0.99)},
          {"mean", mean(values)}};
}

// The mean of each TTFT part over the requests with a first token.
nlohmann::json mean_ttft_parts(const std::vector<RequestRecord>& records,
                               const std::vector<std::string>& tiers) {
  TtftParts sum;
  sum.load_s.assign(tiers.size(), 0);
  double count = 0;
  for (const RequestRecord& r : records) {
    if (r.first_token_s < 0) continue;
    const TtftParts p = ttft_parts(r);
    sum.queue_s += p.queue_s;
    sum.prefill_s += p.prefill_s;
    sum.conversion_s += p.conversion_s;
    sum.other_s += p.other_s;
    for (size_t t = 1; t < tiers.size(); ++t) sum.load_s[t] += p.load_s[t];
    ++count;
  }
  if (count == 0) return nullptr;
  nlohmann::json parts = {{"queue", sum.queue_s / count}};
  for (size_t t = 1; t < tiers.size(); ++t) parts["load_" + tiers[t]] = sum.load_s[t] / count;
  parts["conversion"] = sum.conversion_s / count;
  parts["prefill"] = sum.prefill_s / count;
  parts["other"] = sum.other_s / count;
  return parts;
}

}  // namespace

TtftParts ttft_parts(const RequestRecord& r) {
  TtftParts p;
  double left = r.ttft();
  auto take = [&](double wanted) {
    double part = std::clamp(wanted, 0.0, left);
    left -= part;
    return part;
  };
  p.queue_s = take(r.admitted_s - r.arrival_s);
  p.prefill_s = take(r.prefill_s);
  p.conversion_s = take(r.conversion_s);
  double loads = 0;
  for (double w : r.load_wait_by_tier) loads += w;
  const double load = take(loads);
  p.load_s.assign(r.load_wait_by_tier.size(), 0);
  for (size_t t = 0; t < p.load_s.size(); ++t)
    p.load_s[t] = loads > 0 ? load * r.load_wait_by_tier[t] / loads : 0;
  p.other_s = left;
  return p;
}

std::vector<std::string> ttft_part_names(const nlohmann::json& parts) {
  std::vector<std::string> names{"queue"};
  for (const auto& [name, value] : parts.items()) {
    if (name.starts_with("load_")) names.push_back(name);
  }
  for (const char* name : {"conversion", "prefill", "other"}) names.emplace_back(name);
  return names;
}

double percentile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  double rank = q * static_cast<double>(values.size() - 1);
  size_t low = static_cast<size_t>(std::floor(rank));
  size_t high = std::min(low + 1, values.size() - 1);
  return values[low] + (rank - static_cast<double>(low)) * (values[high] - values[low]);
}

nlohmann::json summarise(const std::vector<RequestRecord>& records,
                         const std::vector<std::string>& tier_names,
                         const std::vector<std::string>& link_names, const std::vector<double>& link_bytes,
                         const Slo& slo, double window_s) {
  std::vector<double> ttft, tpot, e2e;
  int64_t completed = 0, good = 0, input_tokens = 0, recomputed = 0, preemptions = 0, rejected = 0;
  int64_t in_window = 0, tokens_in_window = 0, good_tokens = 0;
  std::vector<int64_t> hits(tier_names.size(), 0);
  for (const RequestRecord& r : records) {
    rejected += r.rejected;
    if (r.first_token_s >= 0) ttft.push_back(r.ttft());
    if (!r.completed()) continue;
    ++completed;
    if (r.output_tokens > 1) tpot.push_back(r.tpot());
    e2e.push_back(r.completion_s - r.arrival_s);
    if (r.completion_s <= window_s) {
      const int64_t tokens = r.input_tokens + r.output_tokens;
      ++in_window;
      tokens_in_window += tokens;
      if (r.ttft() <= slo.ttft_s && r.tpot() <= slo.tpot_s) {
        ++good;
        good_tokens += tokens;
      }
    }
    input_tokens += r.input_tokens;
    recomputed += r.recomputed_tokens;
    preemptions += r.preemptions;
    for (size_t t = 0; t < hits.size() && t < r.hit_tokens.size(); ++t) hits[t] += r.hit_tokens[t];
  }
  // Arrays rather than objects keep tiers fastest first and links in platform order.
  nlohmann::json hit_rate = nlohmann::json::array();
  int64_t hit_total = 0;
  for (size_t t = 0; t < hits.size(); ++t) {
    hit_total += hits[t];
    double rate = input_tokens > 0 ? static_cast<double>(hits[t]) / static_cast<double>(input_tokens) : 0;
    hit_rate.push_back({{"tier", tier_names[t]}, {"rate", rate}, {"tokens", hits[t]}});
  }
  nlohmann::json links = nlohmann::json::array();
  for (size_t l = 0; l < link_names.size(); ++l)
    links.push_back({{"link", link_names[l]}, {"bytes", link_bytes[l]}});
  return {{"requests_issued", records.size()},
          {"requests_completed", completed},
          {"requests_rejected", rejected},
          {"requests_completed_in_window", in_window},
          {"requests_completed_after_window", completed - in_window},
          {"goodput_requests", good},
          {"tokens_in_window", tokens_in_window},
          {"goodput_tokens", good_tokens},
          {"window_s", window_s},
          {"slo", {{"ttft_s", slo.ttft_s}, {"tpot_s", slo.tpot_s}}},
          {"ttft_s", percentiles(ttft)},
          {"ttft_parts_s", mean_ttft_parts(records, tier_names)},
          {"tpot_s", percentiles(tpot)},
          {"e2e_s", percentiles(e2e)},
          {"input_tokens", input_tokens},
          {"hit_rate_tokens", hit_rate},
          {"hit_rate_total",
           input_tokens > 0 ? static_cast<double>(hit_total) / static_cast<double>(input_tokens) : 0},
          {"recomputed_tokens", recomputed},
          {"preemptions", preemptions},
          {"link_bytes", links}};
}

void write_requests_csv(std::ostream& out, const std::vector<RequestRecord>& records,
                        const std::vector<std::string>& tier_names) {
  out << "id,session,turn,arrival_s,queue_s,load_wait_s,prefill_start_s,first_token_s,completion_s,ttft_s,"
         "input_tokens,output_tokens";
  for (const std::string& t : tier_names) out << ",hit_tokens_" << t;
  out << ",recomputed_tokens,preemptions,ttft_queue_s";
  for (size_t t = 1; t < tier_names.size(); ++t) out << ",ttft_load_" << tier_names[t] << "_s";
  out << ",ttft_conversion_s,ttft_prefill_s,ttft_other_s\n";
  out << std::setprecision(9);
  for (const RequestRecord& r : records) {
    double queue = r.admitted_s >= 0 ? r.admitted_s - r.arrival_s : -1;
    out << r.id << ',' << r.session_id << ',' << r.turn << ',' << r.arrival_s << ',' << queue << ','
        << r.load_wait_s << ',' << r.prefill_start_s << ',' << r.first_token_s << ',' << r.completion_s << ','
        << (r.first_token_s >= 0 ? r.ttft() : -1) << ',' << r.input_tokens << ',' << r.output_tokens;
    for (size_t t = 0; t < tier_names.size(); ++t)
      out << ',' << (t < r.hit_tokens.size() ? r.hit_tokens[t] : 0);
    out << ',' << r.recomputed_tokens << ',' << r.preemptions;
    if (r.first_token_s < 0) {
      for (size_t column = 0; column < tier_names.size() + 3; ++column) out << ",";
      out << '\n';
      continue;
    }
    const TtftParts p = ttft_parts(r);
    out << ',' << p.queue_s;
    for (size_t t = 1; t < tier_names.size(); ++t) out << ',' << (t < p.load_s.size() ? p.load_s[t] : 0);
    out << ',' << p.conversion_s << ',' << p.prefill_s << ',' << p.other_s << '\n';
  }
}

void write_timeseries_csv(std::ostream& out, const std::vector<TimeSample>& samples,
                          const std::vector<std::string>& link_names,
                          const std::vector<std::string>& tier_names) {
  out << "time_s,hbm_used_bytes,hbm_cache_bytes,queued,running";
  for (const std::string& l : link_names) out << ",util_" << l;
  for (const std::string& t : tier_names) out << ",hit_rate_" << t;
  out << '\n' << std::setprecision(9);
  for (const TimeSample& s : samples) {
    out << s.time_s << ',' << s.hbm_used_bytes << ',' << s.hbm_cache_bytes << ',' << s.queued << ','
        << s.running;
    for (double u : s.link_utilisation) out << ',' << u;
    for (double h : s.tier_hit_rate) out << ',' << h;
    out << '\n';
  }
}

TimeSample sample_state(double time_s, const TieredCache& cache, SchedulerState& state) {
  TimeSample t;
  t.time_s = time_s;
  const double block_bytes = static_cast<double>(cache.tier(0).bytes_per_block());
  t.hbm_cache_bytes = static_cast<double>(cache.used_blocks(0) - cache.pinned_blocks(0)) * block_bytes;
  t.hbm_used_bytes = static_cast<double>(cache.used_blocks(0)) * block_bytes + state.decode_kv_bytes;
  t.queued = state.queued;
  t.running = state.running;
  for (int64_t& hits : state.hits_since_sample) {
    t.tier_hit_rate.push_back(state.input_since_sample > 0
                                  ? static_cast<double>(hits) / static_cast<double>(state.input_since_sample)
                                  : 0);
    hits = 0;
  }
  state.input_since_sample = 0;
  return t;
}

nlohmann::json cache_traffic_json(const TieredCache& cache) {
  nlohmann::json flows = nlohmann::json::array();
  const TrafficTotals& totals = cache.traffic();
  for (int kind = 0; kind < kCacheEventKinds; ++kind) {
    for (int from = -1; from < cache.tier_count(); ++from) {
      for (int to = -1; to < cache.tier_count(); ++to) {
        const TrafficTotals::Flow& f = totals.flow(static_cast<CacheEventKind>(kind), from, to);
        if (f.blocks == 0) continue;
        auto name = [&](int t) { return t < 0 ? std::string("-") : cache.tier(t).name; };
        flows.push_back({{"event", event_kind_name(static_cast<CacheEventKind>(kind))},
                         {"from", name(from)},
                         {"to", name(to)},
                         {"blocks", f.blocks},
                         {"from_bytes", f.from_bytes},
                         {"to_bytes", f.to_bytes}});
      }
    }
  }
  return flows;
}

}  // namespace kvtier
