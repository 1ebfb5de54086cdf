#include "sim/engine/metrics.h"

#include <algorithm>
#include <cmath>

#include "sim/core/csv_text.h"

namespace kvtier {
namespace {

// Significant digits of the times and fractions in requests.csv and timeseries.csv.
constexpr int kCsvDigits = 9;

// A field after the row's first: a time or fraction, or a count.
void add_number(std::string& row, double value) {
  row += ',';
  append_general(row, value, kCsvDigits);
}
void add_count(std::string& row, int64_t value) {
  row += ',';
  append_integer(row, value);
}

}  // namespace

nlohmann::json percentiles(LatencyQuantiles& values) {
  if (values.empty()) return nullptr;
  return {{"p50", values.percentile(0.50)},
          {"p95", values.percentile(0.95)},
          {"p99", values.percentile(0.99)},
          {"mean", values.mean()}};
}

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

RequestSummary::RequestSummary(std::vector<std::string> tier_names, const Slo& slo, double window_s)
    : tier_names_(std::move(tier_names)), slo_(slo), window_s_(window_s), hits_(tier_names_.size(), 0) {
  parts_sum_.load_s.assign(tier_names_.size(), 0);
}

void RequestSummary::add(const RequestRecord& r) {
  ++issued_;
  rejected_ += r.rejected;
  if (r.first_token_s >= 0) {
    ttft_.add(r.ttft());
    const TtftParts p = ttft_parts(r);
    parts_sum_.queue_s += p.queue_s;
    parts_sum_.prefill_s += p.prefill_s;
    parts_sum_.conversion_s += p.conversion_s;
    parts_sum_.other_s += p.other_s;
    for (size_t t = 1; t < tier_names_.size(); ++t) parts_sum_.load_s[t] += p.load_s[t];
  }
  if (!r.completed()) return;
  ++completed_;
  if (r.output_tokens > 1) tpot_.add(r.tpot());
  e2e_.add(r.completion_s - r.arrival_s);
  if (r.completion_s <= window_s_) {
    const int64_t tokens = r.input_tokens + r.output_tokens;
    ++in_window_;
    tokens_in_window_ += tokens;
    if (r.ttft() <= slo_.ttft_s && r.tpot() <= slo_.tpot_s) {
      ++good_;
      good_tokens_ += tokens;
    }
  }
  input_tokens_ += r.input_tokens;
  recomputed_ += r.recomputed_tokens;
  preemptions_ += r.preemptions;
  for (size_t t = 0; t < hits_.size() && t < r.hit_tokens.size(); ++t) hits_[t] += r.hit_tokens[t];
}

nlohmann::json RequestSummary::to_json(const std::vector<std::string>& link_names,
                                       const std::vector<double>& link_bytes) {
  // Arrays rather than objects keep tiers fastest first and links in platform order.
  nlohmann::json hit_rate = nlohmann::json::array();
  int64_t hit_total = 0;
  for (size_t t = 0; t < hits_.size(); ++t) {
    hit_total += hits_[t];
    double rate = input_tokens_ > 0 ? static_cast<double>(hits_[t]) / static_cast<double>(input_tokens_) : 0;
    hit_rate.push_back({{"tier", tier_names_[t]}, {"rate", rate}, {"tokens", hits_[t]}});
  }
  nlohmann::json links = nlohmann::json::array();
  for (size_t l = 0; l < link_names.size(); ++l)
    links.push_back({{"link", link_names[l]}, {"bytes", link_bytes[l]}});
  nlohmann::json parts = nullptr;
  if (const double count = static_cast<double>(ttft_.count()); count > 0) {
    parts = {{"queue", parts_sum_.queue_s / count}};
    for (size_t t = 1; t < tier_names_.size(); ++t)
      parts["load_" + tier_names_[t]] = parts_sum_.load_s[t] / count;
    parts["conversion"] = parts_sum_.conversion_s / count;
    parts["prefill"] = parts_sum_.prefill_s / count;
    parts["other"] = parts_sum_.other_s / count;
  }
  nlohmann::json summary = {
      {"requests_issued", issued_},
      {"requests_completed", completed_},
      {"requests_rejected", rejected_},
      {"requests_completed_in_window", in_window_},
      {"requests_completed_after_window", completed_ - in_window_},
      {"goodput_requests", good_},
      {"tokens_in_window", tokens_in_window_},
      {"goodput_tokens", good_tokens_},
      {"window_s", window_s_},
      {"slo", {{"ttft_s", slo_.ttft_s}, {"tpot_s", slo_.tpot_s}}},
      {"ttft_s", percentiles(ttft_)},
      {"ttft_parts_s", parts},
      {"tpot_s", percentiles(tpot_)},
      {"e2e_s", percentiles(e2e_)},
      {"input_tokens", input_tokens_},
      {"hit_rate_tokens", hit_rate},
      {"hit_rate_total",
       input_tokens_ > 0 ? static_cast<double>(hit_total) / static_cast<double>(input_tokens_) : 0},
      {"recomputed_tokens", recomputed_},
      {"preemptions", preemptions_},
      {"link_bytes", links}};
  if (!ttft_.exact() || !tpot_.exact() || !e2e_.exact())
    summary["quantile_relative_error"] = LatencyQuantiles::kRelativeError;
  return summary;
}

nlohmann::json summarise(const std::vector<RequestRecord>& records,
                         const std::vector<std::string>& tier_names,
                         const std::vector<std::string>& link_names, const std::vector<double>& link_bytes,
                         const Slo& slo, double window_s) {
  RequestSummary summary(tier_names, slo, window_s);
  for (const RequestRecord& r : records) summary.add(r);
  return summary.to_json(link_names, link_bytes);
}

RequestsCsvWriter::RequestsCsvWriter(std::ostream& out, std::vector<std::string> tier_names,
                                     RouteColumns route_columns)
    : out_(out), tier_names_(std::move(tier_names)), route_columns_(route_columns) {
  out << "id,session,turn,arrival_s,queue_s,load_wait_s,prefill_start_s,first_token_s,completion_s,ttft_s,"
         "input_tokens,output_tokens";
  for (const std::string& t : tier_names_) out << ",hit_tokens_" << t;
  out << ",recomputed_tokens,preemptions,ttft_queue_s";
  for (size_t t = 1; t < tier_names_.size(); ++t) out << ",ttft_load_" << tier_names_[t] << "_s";
  out << ",ttft_conversion_s,ttft_prefill_s,ttft_other_s";
  if (route_columns_ != RouteColumns::kNone) out << ",instance";
  if (route_columns_ == RouteColumns::kHandoff) out << ",prefill_instance,handoff_s";
  out << '\n';
}

void RequestsCsvWriter::write(const RequestRecord& r, int instance, int prefill_instance) {
  row_.clear();
  append_integer(row_, r.id);
  add_count(row_, r.session_id);
  add_count(row_, r.turn);
  add_number(row_, r.arrival_s);
  add_number(row_, r.admitted_s >= 0 ? r.admitted_s - r.arrival_s : -1);
  add_number(row_, r.load_wait_s);
  add_number(row_, r.prefill_start_s);
  add_number(row_, r.first_token_s);
  add_number(row_, r.completion_s);
  add_number(row_, r.first_token_s >= 0 ? r.ttft() : -1);
  add_count(row_, r.input_tokens);
  add_count(row_, r.output_tokens);
  for (size_t t = 0; t < tier_names_.size(); ++t)
    add_count(row_, t < r.hit_tokens.size() ? r.hit_tokens[t] : 0);
  add_count(row_, r.recomputed_tokens);
  add_count(row_, r.preemptions);
  if (r.first_token_s < 0) {
    row_.append(tier_names_.size() + 3, ',');
  } else {
    const TtftParts p = ttft_parts(r);
    add_number(row_, p.queue_s);
    for (size_t t = 1; t < tier_names_.size(); ++t) add_number(row_, t < p.load_s.size() ? p.load_s[t] : 0);
    add_number(row_, p.conversion_s);
    add_number(row_, p.prefill_s);
    add_number(row_, p.other_s);
  }
  if (route_columns_ != RouteColumns::kNone) add_count(row_, instance);
  if (route_columns_ == RouteColumns::kHandoff) {
    add_count(row_, prefill_instance);
    add_number(row_, r.prefill_end_s >= 0 && r.first_token_s >= 0 ? r.first_token_s - r.prefill_end_s : -1);
  }
  row_ += '\n';
  out_.write(row_.data(), static_cast<std::streamsize>(row_.size()));
}

void write_requests_csv(std::ostream& out, const std::vector<RequestRecord>& records,
                        const std::vector<std::string>& tier_names) {
  RequestsCsvWriter writer(out, tier_names);
  for (const RequestRecord& r : records) writer.write(r);
}

TimeseriesCsvWriter::TimeseriesCsvWriter(std::ostream& out, const std::vector<std::string>& link_names,
                                         const std::vector<std::string>& tier_names)
    : out_(out) {
  out << "time_s,hbm_used_bytes,hbm_cache_bytes,queued,running";
  for (const std::string& l : link_names) out << ",util_" << l;
  for (const std::string& t : tier_names) out << ",hit_rate_" << t;
  out << '\n';
}

void TimeseriesCsvWriter::write(const TimeSample& s) {
  row_.clear();
  append_general(row_, s.time_s, kCsvDigits);
  add_number(row_, s.hbm_used_bytes);
  add_number(row_, s.hbm_cache_bytes);
  add_count(row_, s.queued);
  add_count(row_, s.running);
  for (double u : s.link_utilisation) add_number(row_, u);
  for (double h : s.tier_hit_rate) add_number(row_, h);
  row_ += '\n';
  out_.write(row_.data(), static_cast<std::streamsize>(row_.size()));
}

void write_timeseries_csv(std::ostream& out, const std::vector<TimeSample>& samples,
                          const std::vector<std::string>& link_names,
                          const std::vector<std::string>& tier_names) {
  TimeseriesCsvWriter writer(out, link_names, tier_names);
  for (const TimeSample& s : samples) writer.write(s);
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
  std::vector<std::string> names;
  for (int t = 0; t < cache.tier_count(); ++t) names.push_back(cache.tier(t).name);
  return cache_traffic_json(cache.traffic(), names);
}

nlohmann::json cache_traffic_json(const TrafficTotals& totals, const std::vector<std::string>& tier_names) {
  nlohmann::json flows = nlohmann::json::array();
  for (int kind = 0; kind < kCacheEventKinds; ++kind) {
    for (int from = -1; from < totals.tiers(); ++from) {
      for (int to = -1; to < totals.tiers(); ++to) {
        const TrafficTotals::Flow& f = totals.flow(static_cast<CacheEventKind>(kind), from, to);
        if (f.blocks == 0) continue;
        auto name = [&](int t) { return t < 0 ? std::string("-") : tier_names[t]; };
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
