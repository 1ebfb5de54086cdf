#include "validate/compare/comparison.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <tuple>

#include "sim/core/config.h"
#include "validate/compare/stats.h"

namespace kvtier::validation {
namespace {

std::string percent(double fraction) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%+.2f %%", 100 * fraction);
  return buffer;
}

std::string magnitude(double fraction) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.2f %%", 100 * fraction);
  return buffer;
}

std::string limit_text(double fraction) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g %%", 100 * fraction);
  return buffer;
}

std::optional<double> metric_of(const RequestTimes& r, Metric m) {
  switch (m) {
    case kTtft:
      return r.started() ? std::optional<double>(r.ttft_s) : std::nullopt;
    case kTpot:
      return r.tpot_s();
    default:
      return r.e2e_s();
  }
}

std::optional<Percentiles> percentiles_of(std::vector<double> values) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  return Percentiles{percentile_of_sorted(values, 0.50), percentile_of_sorted(values, 0.95),
                     percentile_of_sorted(values, 0.99)};
}

using RequestPair = std::pair<const RequestTimes*, const RequestTimes*>;  // predicted, measured

// What pairs a request across the two runs. Open-loop runs issue the same requests, so the id does; in a
// closed loop ids follow the order of arrival, which the runs' timings decide, and a request is turn
// `turn` of session `session`.
std::pair<int64_t, int64_t> pairing_key(const RequestTimes& r) {
  return r.session >= 0 ? std::pair<int64_t, int64_t>{r.session, r.turn}
                        : std::pair<int64_t, int64_t>{-1, static_cast<int64_t>(r.id)};
}

std::string describe(const RequestTimes& r) {
  return r.session >= 0 ? "session " + std::to_string(r.session) + " turn " + std::to_string(r.turn)
                        : "request " + std::to_string(r.id);
}

// Each predicted request with its measured twin. Open-loop runs must hold the same requests; closed-loop
// runs may differ at the end of the window, where one run issued a turn the other had no time for: those
// stay unpaired (the requests-completed check covers them).
std::vector<RequestPair> match_requests(const VariantRun& predicted, const VariantRun& measured) {
  std::map<std::pair<int64_t, int64_t>, const RequestTimes*> by_key;
  for (const RequestTimes& r : measured.requests) by_key.emplace(pairing_key(r), &r);
  std::vector<RequestPair> matched;
  matched.reserve(predicted.requests.size());
  for (const RequestTimes& p : predicted.requests) {
    auto found = by_key.find(pairing_key(p));
    if (found == by_key.end()) {
      if (p.session >= 0) continue;
      throw ConfigError(measured.requests_file + ": no request " + std::to_string(p.id) + ", which " +
                        predicted.requests_file + ":" + std::to_string(p.line) +
                        " has; both runs must replay the same trace");
    }
    const RequestTimes& m = *found->second;
    if (m.input_tokens != p.input_tokens || m.output_tokens != p.output_tokens) {
      throw ConfigError(measured.requests_file + ":" + std::to_string(m.line) + ": " + describe(m) + " has " +
                        std::to_string(m.input_tokens) + " input and " + std::to_string(m.output_tokens) +
                        " output tokens, " + predicted.requests_file + ":" + std::to_string(p.line) + " has " +
                        std::to_string(p.input_tokens) + " and " + std::to_string(p.output_tokens) +
                        "; both runs must replay the same trace");
    }
    matched.push_back({&p, &m});
    by_key.erase(found);
  }
  for (const auto& [key, extra] : by_key) {
    if (extra->session >= 0) continue;
    throw ConfigError(measured.requests_file + ":" + std::to_string(extra->line) + ": request " +
                      std::to_string(extra->id) + " is not in " + predicted.requests_file +
                      "; both runs must replay the same trace");
  }
  return matched;
}

MetricComparison compare_metric(const std::vector<RequestComparison>& requests, Metric m) {
  MetricComparison c;
  std::vector<double> predicted, measured, errors, abs_errors;
  for (const RequestComparison& r : requests) {
    if (r.predicted[m]) predicted.push_back(*r.predicted[m]);
    if (r.measured[m]) measured.push_back(*r.measured[m]);
    if (r.predicted[m] && r.measured[m] && *r.measured[m] > 0) {
      errors.push_back(relative_error(*r.predicted[m], *r.measured[m]));
      abs_errors.push_back(std::abs(errors.back()));
    }
  }
  c.predicted_count = predicted.size();
  c.measured_count = measured.size();
  c.predicted = percentiles_of(std::move(predicted));
  c.measured = percentiles_of(std::move(measured));
  if (c.predicted && c.measured && c.measured->p50 > 0) {
    c.error = Percentiles{relative_error(c.predicted->p50, c.measured->p50),
                          relative_error(c.predicted->p95, c.measured->p95),
                          relative_error(c.predicted->p99, c.measured->p99)};
  }
  c.paired = errors.size();
  if (!errors.empty()) {
    c.median_error = percentile(std::move(errors), 0.5);
    std::sort(abs_errors.begin(), abs_errors.end());
    c.median_abs_error = percentile_of_sorted(abs_errors, 0.5);
    c.p95_abs_error = percentile_of_sorted(abs_errors, 0.95);
  }
  return c;
}

// `error` is a signed relative error, or already a magnitude (a median of |errors|) when !is_signed.
Check bounded(std::string name, std::optional<double> error, double limit, std::string detail,
              bool is_signed = true) {
  Check c{std::move(name), Verdict::kNotCompared, std::nullopt, limit, std::nullopt, std::move(detail)};
  if (!error) return c;
  c.value = std::abs(*error);
  c.verdict = *c.value <= limit ? Verdict::kPassed : Verdict::kMissed;
  c.detail = (is_signed ? percent(*error) : magnitude(*error)) + " (limit " + limit_text(limit) + ")" +
             (c.detail.empty() ? "" : "; " + c.detail);
  return c;
}

Check ttft_percentile_check(const char* name, const MetricComparison& ttft, double Percentiles::*p,
                            const Targets& t) {
  if (!ttft.error) {
    return bounded(name, std::nullopt, t.ttft_percentile_error, "no request has a first token on both sides");
  }
  Check c = bounded(name, (*ttft.error).*p, t.ttft_percentile_error, "");
  c.goal = t.ttft_percentile_goal;
  c.detail += std::string(", goal ") + limit_text(t.ttft_percentile_goal) +
              (*c.value <= t.ttft_percentile_goal ? " met" : " not met");
  return c;
}

Check completed_check(const VariantComparison& v, const Targets& t) {
  std::string counts = std::to_string(v.predicted_completed) + " predicted, " +
                       std::to_string(v.measured_completed) + " measured";
  if (v.measured_completed == 0) {
    Check c = bounded("requests_completed", std::nullopt, t.completed_error, counts);
    c.verdict = v.predicted_completed == 0 ? Verdict::kPassed : Verdict::kMissed;
    return c;
  }
  return bounded(
      "requests_completed",
      relative_error(static_cast<double>(v.predicted_completed), static_cast<double>(v.measured_completed)),
      t.completed_error, counts);
}

Check hits_check(const VariantComparison& v) {
  std::string differ;
  for (const TierHits& h : v.hits) {
    if (h.predicted != h.measured) {
      differ += (differ.empty() ? "" : "; ") + h.tier + ": " + std::to_string(h.predicted) + " predicted, " +
                std::to_string(h.measured) + " measured";
    }
  }
  return {"hit_tokens", differ.empty() ? Verdict::kPassed : Verdict::kMissed, std::nullopt, std::nullopt,
          std::nullopt, differ.empty() ? "equal in every tier" : differ};
}

Check links_check(const VariantComparison& v) {
  std::string differ;
  for (const LinkComparison& l : v.links) {
    if (l.predicted != l.measured) {
      differ += (differ.empty() ? "" : "; ") + l.link + ": " +
                std::to_string(static_cast<int64_t>(l.predicted)) + " B predicted, " +
                std::to_string(static_cast<int64_t>(l.measured)) + " B measured";
    }
  }
  return {"link_bytes", differ.empty() ? Verdict::kPassed : Verdict::kMissed, std::nullopt, std::nullopt,
          std::nullopt, differ.empty() ? "equal on every link" : differ};
}

std::vector<TierHits> compare_hits(const VariantRun& predicted, const VariantRun& measured) {
  if (predicted.tiers != measured.tiers) {
    auto names = [](const std::vector<std::string>& tiers) {
      std::string out;
      for (const std::string& t : tiers) out += (out.empty() ? "" : ", ") + t;
      return out.empty() ? std::string("none") : out;
    };
    throw ConfigError(measured.requests_file + ":1: hit_tokens_ columns for tiers " + names(measured.tiers) +
                      ", " + predicted.requests_file + " has " + names(predicted.tiers) +
                      "; both runs must have the same tiers");
  }
  std::vector<TierHits> hits;
  for (size_t t = 0; t < predicted.tiers.size(); ++t)
    hits.push_back({predicted.tiers[t], predicted.hit_tokens[t], measured.hit_tokens[t]});
  return hits;
}

// Every link of either run, the predicted run's order first.
std::vector<LinkComparison> compare_links(const VariantRun& predicted, const VariantRun& measured) {
  std::vector<LinkComparison> links;
  auto entry = [&](const std::string& link) -> LinkComparison& {
    auto it =
        std::find_if(links.begin(), links.end(), [&](const LinkComparison& l) { return l.link == link; });
    return it != links.end() ? *it : links.emplace_back(LinkComparison{link, 0, 0});
  };
  for (const LinkBytes& l : predicted.link_bytes) entry(l.link).predicted += l.bytes;
  for (const LinkBytes& l : measured.link_bytes) entry(l.link).measured += l.bytes;
  return links;
}

// A transfer, placed among its twins: its path, the request it was for (the request's pairing key,
// kNoRequestKey for none) and its row, so that sorting by the three keeps the file's order within a key.
struct KeyedTransfer {
  const std::string* path;
  std::pair<int64_t, int64_t> request;
  size_t row;
  double seconds;

  bool same_key(const KeyedTransfer& o) const { return *path == *o.path && request == o.request; }
  bool key_before(const KeyedTransfer& o) const {
    return std::tie(*path, request) < std::tie(*o.path, o.request);
  }
};
constexpr std::pair<int64_t, int64_t> kNoRequestKey{-2, -2};

// The run's transfers sorted by key. Without `by_request`, every transfer has the no-request key, so that
// a path's transfers pair by order alone.
std::vector<KeyedTransfer> keyed_transfers(const VariantRun& run, bool by_request) {
  std::vector<std::pair<uint64_t, std::pair<int64_t, int64_t>>> keys;  // by request id
  if (by_request) {
    keys.reserve(run.requests.size());
    for (const RequestTimes& r : run.requests) keys.emplace_back(r.id, pairing_key(r));
    std::sort(keys.begin(), keys.end());
  }
  auto key_of = [&](int64_t id) {
    if (!by_request || id == kNoRequest) return kNoRequestKey;
    auto it =
        std::lower_bound(keys.begin(), keys.end(), std::make_pair(static_cast<uint64_t>(id), kNoRequestKey));
    if (it == keys.end() || it->first != static_cast<uint64_t>(id))
      throw std::logic_error("transfers.csv names request " + std::to_string(id) + ", not in requests.csv");
    return it->second;
  };
  std::vector<KeyedTransfer> out;
  out.reserve(run.transfers->rows.size());
  for (size_t i = 0; i < run.transfers->rows.size(); ++i) {
    const TransferRecord& t = run.transfers->rows[i];
    out.push_back({&t.path, key_of(t.request), i, t.seconds()});
  }
  std::sort(out.begin(), out.end(), [](const KeyedTransfer& a, const KeyedTransfer& b) {
    return a.key_before(b) || (a.same_key(b) && a.row < b.row);
  });
  return out;
}

// Per path, |error| of each transfer against its twin: the two runs' transfers of one key paired in order.
std::map<std::string, std::vector<double>> twin_errors(const std::vector<KeyedTransfer>& predicted,
                                                       const std::vector<KeyedTransfer>& measured) {
  std::map<std::string, std::vector<double>> errors;
  size_t p = 0, m = 0;
  while (p < predicted.size() && m < measured.size()) {
    if (predicted[p].key_before(measured[m])) {
      ++p;
    } else if (measured[m].key_before(predicted[p])) {
      ++m;
    } else {
      for (; p < predicted.size() && m < measured.size() && predicted[p].same_key(measured[m]); ++p, ++m) {
        if (measured[m].seconds > 0)
          errors[*measured[m].path].push_back(
              std::abs(relative_error(predicted[p].seconds, measured[m].seconds)));
      }
      const KeyedTransfer& key = p < predicted.size() ? predicted[p - 1] : measured[m - 1];
      while (p < predicted.size() && predicted[p].same_key(key)) ++p;  // twins the other run did not make
      while (m < measured.size() && measured[m].same_key(key)) ++m;
    }
  }
  return errors;
}

// Per path, each transfer of one run against its twin in the other: when both files name requests, the
// k-th transfer on the path for a request against the k-th for the same request of the other run (paired
// as the requests are), transfers for no request by order; otherwise the k-th of a path against the k-th.
std::vector<PathTransfers> compare_transfers(const VariantRun& predicted, const VariantRun& measured,
                                             bool by_request) {
  std::map<std::string, PathTransfers> by_path;
  auto entry = [&](const std::string& path) -> PathTransfers& {
    PathTransfers& p = by_path[path];
    p.path = path;
    return p;
  };
  for (const TransferRecord& t : predicted.transfers->rows) {
    PathTransfers& p = entry(t.path);
    ++p.predicted_count, p.predicted_seconds += t.seconds(), p.predicted_bytes += t.bytes;
  }
  for (const TransferRecord& t : measured.transfers->rows) {
    PathTransfers& p = entry(t.path);
    ++p.measured_count, p.measured_seconds += t.seconds(), p.measured_bytes += t.bytes;
  }
  std::map<std::string, std::vector<double>> errors =
      twin_errors(keyed_transfers(predicted, by_request), keyed_transfers(measured, by_request));
  std::vector<PathTransfers> paths;
  for (auto& [path, c] : by_path) {
    std::vector<double>& e = errors[path];
    c.paired = e.size();
    if (!e.empty()) c.median_abs_error = percentile(std::move(e), 0.5);
    paths.push_back(std::move(c));
  }
  return paths;
}

// Why transfers are not compared: the file the first run without one lacks.
std::string no_transfers(const VariantRun& predicted, const VariantRun& measured) {
  return "not compared: no " + (predicted.transfers ? measured.transfers_file : predicted.transfers_file);
}

Check transfers_check(const VariantComparison& v, const VariantRun& predicted, const VariantRun& measured,
                      const Targets& t) {
  Check c{
      "transfer_time", Verdict::kNotCompared, std::nullopt, t.transfer_time_median_error, std::nullopt, ""};
  if (!v.transfers) {
    c.detail = no_transfers(predicted, measured);
    return c;
  }
  std::string worst_path, unmatched;
  for (const PathTransfers& p : *v.transfers) {
    if (!p.median_abs_error) {
      unmatched += (unmatched.empty() ? "" : ", ") + p.path + " (" + std::to_string(p.predicted_count) +
                   " predicted, " + std::to_string(p.measured_count) + " measured)";
    } else if (!c.value || *p.median_abs_error > *c.value) {
      c.value = p.median_abs_error;
      worst_path = p.path;
    }
  }
  if (!unmatched.empty()) {
    c.verdict = Verdict::kMissed;
    c.detail = "no transfers to pair on " + unmatched;
  } else if (c.value) {
    c.verdict = *c.value <= c.limit ? Verdict::kPassed : Verdict::kMissed;
    c.detail = "worst path " + worst_path + ": median |error| " + magnitude(*c.value) + " (limit " +
               limit_text(*c.limit) + ")";
  } else {
    c.detail = "not compared: neither run made a transfer";
  }
  return c;
}

Check transfer_bytes_check(const VariantComparison& v, const VariantRun& predicted,
                           const VariantRun& measured) {
  Check c{"transfer_bytes", Verdict::kNotCompared, std::nullopt, std::nullopt, std::nullopt, ""};
  if (!v.transfers) {
    c.detail = no_transfers(predicted, measured);
    return c;
  }
  for (const PathTransfers& p : *v.transfers) {
    if (p.predicted_bytes != p.measured_bytes) {
      c.detail += (c.detail.empty() ? "" : "; ") + p.path + ": " +
                  std::to_string(static_cast<int64_t>(p.predicted_bytes)) + " B predicted, " +
                  std::to_string(static_cast<int64_t>(p.measured_bytes)) + " B measured";
    }
  }
  c.verdict = c.detail.empty() ? Verdict::kPassed : Verdict::kMissed;
  if (c.detail.empty()) c.detail = "equal on every path";
  return c;
}

// `cache` is the run whose hits, bytes and transfers are compared with the measurement: the prediction,
// or its replay at the measured arrivals.
VariantComparison compare_variant(const VariantRun& predicted, const VariantRun& measured, const Targets& t,
                                  const VariantRun& cache) {
  VariantComparison v;
  v.name = predicted.name;
  const std::vector<RequestPair> matched = match_requests(predicted, measured);
  v.requests.reserve(matched.size());
  for (const auto& [p, measured_request] : matched) {
    RequestComparison r{p->id, {}, {}};
    for (int m = 0; m < kMetricCount; ++m) {
      r.predicted[m] = metric_of(*p, static_cast<Metric>(m));
      r.measured[m] = metric_of(*measured_request, static_cast<Metric>(m));
    }
    v.requests.push_back(r);
  }
  for (int m = 0; m < kMetricCount; ++m) v.metrics[m] = compare_metric(v.requests, static_cast<Metric>(m));
  v.predicted_completed = predicted.completed_in_window();
  v.measured_completed = measured.completed_in_window();
  v.cache_at_measured_arrivals = &cache != &predicted;
  v.hits = compare_hits(cache, measured);
  v.links = compare_links(cache, measured);
  if (cache.transfers && measured.transfers) {
    v.transfers_by_request = cache.transfers->names_requests && measured.transfers->names_requests;
    v.transfers = compare_transfers(cache, measured, v.transfers_by_request);
  }
  const MetricComparison& ttft = v.metrics[kTtft];
  v.checks = {ttft_percentile_check("ttft_p50", ttft, &Percentiles::p50, t),
              ttft_percentile_check("ttft_p95", ttft, &Percentiles::p95, t),
              bounded("ttft_request_median", ttft.median_abs_error, t.ttft_request_median_error,
                      ttft.median_abs_error
                          ? "median over " + std::to_string(ttft.paired) + " requests of |TTFT error|"
                          : "no request has a first token on both sides",
                      false),
              completed_check(v, t),
              hits_check(v),
              links_check(v),
              transfers_check(v, cache, measured, t),
              transfer_bytes_check(v, cache, measured)};
  return v;
}

std::string variant_names(const RunFolder& run) {
  std::string out;
  for (const VariantRun& v : run.variants) out += (out.empty() ? "'" : ", '") + v.name + "'";
  return out;
}

}  // namespace

const char* verdict_name(Verdict verdict) {
  switch (verdict) {
    case Verdict::kPassed:
      return "passed";
    case Verdict::kMissed:
      return "missed";
    default:
      return "not compared";
  }
}

const char* metric_name(Metric metric) {
  static constexpr const char* kNames[] = {"ttft_s", "tpot_s", "e2e_s"};
  return kNames[metric];
}

std::vector<std::string> Comparison::missed() const {
  std::vector<std::string> names;
  for (const VariantComparison& v : variants) {
    for (const Check& c : v.checks) {
      if (c.verdict == Verdict::kMissed) names.push_back(v.name + ": " + c.name);
    }
  }
  return names;
}

// The variant of `other` named as `v`; throws ConfigError when the two runs' variants differ.
const VariantRun& same_variant(const VariantRun& v, const RunFolder& run, const RunFolder& other) {
  auto found = std::find_if(other.variants.begin(), other.variants.end(),
                            [&](const VariantRun& o) { return o.name == v.name; });
  if (run.variants.size() != other.variants.size() || found == other.variants.end()) {
    throw ConfigError((std::filesystem::path(other.dir) / kSummaryFile).string() + ": variants " +
                      variant_names(other) + ", but " +
                      (std::filesystem::path(run.dir) / kSummaryFile).string() + " has " +
                      variant_names(run) + "; both runs must be of the same scenario");
  }
  return *found;
}

Comparison compare_runs(const RunFolder& predicted, const RunFolder& measured, const Targets& targets,
                        const RunFolder* cache_replay) {
  Comparison comparison{predicted.dir, measured.dir, targets, {}};
  for (const VariantRun& p : predicted.variants) {
    const VariantRun& m = same_variant(p, predicted, measured);
    const VariantRun& cache = cache_replay ? same_variant(p, predicted, *cache_replay) : p;
    comparison.variants.push_back(compare_variant(p, m, targets, cache));
  }
  return comparison;
}

}  // namespace kvtier::validation
