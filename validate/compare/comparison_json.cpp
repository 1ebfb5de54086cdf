// The comparison as JSON (`kvtier validate --format json`) and as a per-request CSV (the plots' data).
#include <iomanip>

#include "validate/compare/comparison.h"

namespace kvtier::validation {
namespace {

nlohmann::json optional_number(const std::optional<double>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

nlohmann::json percentiles_json(const std::optional<Percentiles>& p) {
  if (!p) return nullptr;
  return {{"p50", p->p50}, {"p95", p->p95}, {"p99", p->p99}};
}

nlohmann::json metric_json(const MetricComparison& m) {
  return {{"predicted", percentiles_json(m.predicted)},
          {"measured", percentiles_json(m.measured)},
          {"error", percentiles_json(m.error)},
          {"predicted_requests", m.predicted_count},
          {"measured_requests", m.measured_count},
          {"per_request",
           {{"paired", m.paired},
            {"median_error", optional_number(m.median_error)},
            {"median_abs_error", optional_number(m.median_abs_error)},
            {"p95_abs_error", optional_number(m.p95_abs_error)}}}};
}

nlohmann::json check_json(const Check& c) {
  return {{"name", c.name},
          {"verdict", verdict_name(c.verdict)},
          {"value", optional_number(c.value)},
          {"limit", optional_number(c.limit)},
          {"goal", optional_number(c.goal)},
          {"detail", c.detail}};
}

nlohmann::json variant_json(const VariantComparison& v) {
  nlohmann::json j = {
      {"name", v.name}, {"checks", nlohmann::json::array()}, {"metrics", nlohmann::json::object()}};
  for (const Check& c : v.checks) j["checks"].push_back(check_json(c));
  for (int m = 0; m < kMetricCount; ++m)
    j["metrics"][metric_name(static_cast<Metric>(m))] = metric_json(v.metrics[m]);
  j["requests_completed"] = {{"predicted", v.predicted_completed}, {"measured", v.measured_completed}};
  j["cache_predicted_at"] = v.cache_at_measured_arrivals ? "measured arrivals" : "predicted arrivals";
  j["hit_tokens"] = nlohmann::json::array();
  for (const TierHits& h : v.hits)
    j["hit_tokens"].push_back({{"tier", h.tier}, {"predicted", h.predicted}, {"measured", h.measured}});
  j["link_bytes"] = nlohmann::json::array();
  for (const LinkComparison& l : v.links)
    j["link_bytes"].push_back({{"link", l.link}, {"predicted", l.predicted}, {"measured", l.measured}});
  j["transfers"] = nullptr;
  j["transfers_paired_by"] = nullptr;
  if (v.transfers) {
    j["transfers_paired_by"] = v.transfers_by_request ? "request" : "order";
    j["transfers"] = nlohmann::json::array();
    for (const PathTransfers& p : *v.transfers) {
      j["transfers"].push_back({{"path", p.path},
                                {"predicted_count", p.predicted_count},
                                {"measured_count", p.measured_count},
                                {"predicted_seconds", p.predicted_seconds},
                                {"measured_seconds", p.measured_seconds},
                                {"predicted_bytes", p.predicted_bytes},
                                {"measured_bytes", p.measured_bytes},
                                {"paired", p.paired},
                                {"median_abs_error", optional_number(p.median_abs_error)}});
    }
  }
  return j;
}

}  // namespace

nlohmann::json to_json(const Comparison& c) {
  const Targets& t = c.targets;
  nlohmann::json j = {{"predicted", c.predicted_dir},
                      {"measured", c.measured_dir},
                      {"passed", c.missed().empty()},
                      {"missed", c.missed()},
                      {"targets",
                       {{"ttft_percentile_error", t.ttft_percentile_error},
                        {"ttft_percentile_goal", t.ttft_percentile_goal},
                        {"ttft_request_median_error", t.ttft_request_median_error},
                        {"completed_error", t.completed_error},
                        {"transfer_time_median_error", t.transfer_time_median_error}}},
                      {"variants", nlohmann::json::array()}};
  for (const VariantComparison& v : c.variants) j["variants"].push_back(variant_json(v));
  return j;
}

void write_request_errors_csv(std::ostream& out, const VariantComparison& v) {
  static constexpr const char* kShort[] = {"ttft", "tpot", "e2e"};
  out << "id";
  for (const char* m : kShort) out << ",predicted_" << m << "_s,measured_" << m << "_s,error_" << m;
  out << '\n' << std::setprecision(9);
  for (const RequestComparison& r : v.requests) {
    out << r.id;
    for (int m = 0; m < kMetricCount; ++m) {
      out << ',';
      if (r.predicted[m]) out << *r.predicted[m];
      out << ',';
      if (r.measured[m]) out << *r.measured[m];
      out << ',';
      if (r.predicted[m] && r.measured[m] && *r.measured[m] > 0)
        out << (*r.predicted[m] - *r.measured[m]) / *r.measured[m];
    }
    out << '\n';
  }
}

}  // namespace kvtier::validation
