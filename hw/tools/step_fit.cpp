#include "hw/tools/step_fit.h"

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>

#include "hw/tools/attention_fit.h"

namespace kvtier::hw {
namespace {

// overhead, u_linear, u_attention, v_attention, u_kv, w_attention (see step_fit.h)
constexpr int kUnknowns = 6;
using Unknowns = std::array<double, kUnknowns>;

struct Row {
  Unknowns a{};
  double b = 0;
};

// Least squares over the unknowns in `free` (a bit mask), the others held at 0; nullopt when the normal
// equations are singular or a free unknown comes out negative.
std::optional<Unknowns> solve_subset(const std::vector<Row>& rows, unsigned free) {
  std::vector<int> columns;
  for (int j = 0; j < kUnknowns; ++j) {
    if (free & (1u << j)) columns.push_back(j);
  }
  const size_t k = columns.size();
  Unknowns scale{};
  for (int j : columns) {
    for (const Row& r : rows) scale[j] = std::max(scale[j], std::abs(r.a[j]));
    if (scale[j] == 0) return std::nullopt;
  }
  // Normal equations of the scaled columns, [k][k + 1] with the right-hand side last.
  std::vector<std::vector<double>> m(k, std::vector<double>(k + 1, 0));
  for (const Row& r : rows) {
    for (size_t p = 0; p < k; ++p) {
      const double ap = r.a[columns[p]] / scale[columns[p]];
      for (size_t q = 0; q < k; ++q) m[p][q] += ap * r.a[columns[q]] / scale[columns[q]];
      m[p][k] += ap * r.b;
    }
  }
  for (size_t p = 0; p < k; ++p) {  // Gaussian elimination, partial pivoting
    size_t pivot = p;
    for (size_t q = p + 1; q < k; ++q) {
      if (std::abs(m[q][p]) > std::abs(m[pivot][p])) pivot = q;
    }
    std::swap(m[p], m[pivot]);
    if (std::abs(m[p][p]) < 1e-12 * static_cast<double>(rows.size())) return std::nullopt;
    for (size_t q = 0; q < k; ++q) {
      if (q == p) continue;
      const double factor = m[q][p] / m[p][p];
      for (size_t c = p; c <= k; ++c) m[q][c] -= factor * m[p][c];
    }
  }
  Unknowns x{};
  for (size_t p = 0; p < k; ++p) {
    x[columns[p]] = m[p][k] / m[p][p] / scale[columns[p]];
    if (x[columns[p]] < 0) return std::nullopt;
  }
  return x;
}

double squared_error(const std::vector<Row>& rows, const Unknowns& x) {
  double sum = 0;
  for (const Row& r : rows) {
    double e = -r.b;
    for (int j = 0; j < kUnknowns; ++j) e += r.a[j] * x[j];
    sum += e * e;
  }
  return sum;
}

// Non-negative least squares by trying every subset of free unknowns: exact, and cheap for six.
Unknowns non_negative_least_squares(const std::vector<Row>& rows) {
  Unknowns best{};
  double best_error = squared_error(rows, best);
  for (unsigned free = 1; free < (1u << kUnknowns); ++free) {
    const std::optional<Unknowns> x = solve_subset(rows, free);
    if (!x) continue;
    const double error = squared_error(rows, *x);
    if (error < best_error) {
      best = *x;
      best_error = error;
    }
  }
  return best;
}

// Rows of the relative error for the given linear-layer regime of each step. With `measured_attention`,
// each step's attention is that time, not the formula's unknowns.
std::vector<Row> relative_rows(const std::vector<StepTerms>& terms, const std::vector<StepSample>& samples,
                               double hbm_rate, const std::vector<bool>& compute_bound, bool measured_attention) {
  std::vector<Row> rows;
  for (size_t i = 0; i < samples.size(); ++i) {
    const StepTerms& t = terms[i];
    const double m = samples[i].seconds;
    Row r;
    r.a = {1 / m, compute_bound[i] ? t.linear_flops / m : 0};
    if (!measured_attention) {
      r.a[2] = t.attention_flops / m, r.a[3] = t.attention_flops_per_key / m;
      r.a[4] = t.decode_kv_bytes / m, r.a[5] = t.attention_flops_per_query / m;
    }
    r.b = 1 - (compute_bound[i] ? 0 : t.weight_bytes / hbm_rate / m) -
          (measured_attention ? samples[i].attention_seconds / m : 0);
    rows.push_back(r);
  }
  return rows;
}

// The attention model fitted to each step's attention per layer, or nullopt where the steps cannot give
// one (no tiling, or a step whose attention was not timed).
std::optional<AttentionCosts> fit_attention(const ModelCard& model, const std::vector<StepSample>& samples,
                                            const std::optional<AttentionCosts>& tiling) {
  if (!tiling) return std::nullopt;
  std::vector<AttentionSample> launches;
  for (const StepSample& s : samples) {
    if (!(s.attention_seconds > 0)) return std::nullopt;
    launches.push_back({s.attention_sequences(), s.attention_seconds / model.layers});
  }
  return fit_attention_costs(*tiling, model.kv_heads, model.query_heads / model.kv_heads, launches);
}

void require_determined(double inverse_rate, const char* what) {
  if (!(inverse_rate > 0)) {
    throw std::invalid_argument(std::string("step fit: the measurements do not determine ") + what);
  }
}

}  // namespace

std::vector<AttentionSequence> StepSample::attention_sequences() const {
  std::vector<AttentionSequence> sequences;
  for (int64_t s = 0; s < decode_sequences; ++s) sequences.push_back({decode_context, 1});
  for (int64_t s = 0; s < prefill_sequences; ++s) sequences.push_back({cached_tokens, new_tokens});
  return sequences;
}

StepWork StepSample::work() const {
  StepWork work;
  for (int64_t s = 0; s < prefill_sequences; ++s) work.add_prefill(cached_tokens, new_tokens);
  for (int64_t s = 0; s < decode_sequences; ++s) work.add_decode(decode_context);
  return work;
}

const char* StepSample::kind() const {
  if (prefill_sequences > 0 && decode_sequences > 0) return "mixed";
  return prefill_sequences > 0 ? "prefill" : "decode";
}

int64_t StepSample::kv_tokens() const {
  return prefill_sequences * (cached_tokens + new_tokens) + decode_sequences * (decode_context + 1);
}

StepSample parse_step_shape(const std::string& text) {
  const std::string expected =
      "expected NEW:CACHED or NEW:CACHED:DECODES:CONTEXT in tokens, got '" + text + "'";
  std::vector<int64_t> fields;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find(':', start), text.size());
    const std::string field = text.substr(start, end - start);
    int64_t value = 0;
    const auto [rest, error] = std::from_chars(field.data(), field.data() + field.size(), value);
    if (field.empty() || error != std::errc() || rest != field.data() + field.size() || value < 0)
      throw std::invalid_argument(expected);
    fields.push_back(value);
    start = end + 1;
  }
  if ((fields.size() != 2 && fields.size() != 4) || fields[0] == 0) throw std::invalid_argument(expected);
  StepSample step{.prefill_sequences = 1, .new_tokens = fields[0], .cached_tokens = fields[1]};
  if (fields.size() == 4) {
    step.decode_sequences = fields[2];
    step.decode_context = fields[3];
    if (step.decode_sequences > 0 && step.decode_context == 0)
      throw std::invalid_argument(expected + ": decodes need a context of at least one token");
  }
  return step;
}

std::vector<StepSample> probe_steps(int64_t kv_tokens_available) {
  std::vector<StepSample> steps;
  for (int64_t fresh : {512, 2048, 8192, 16384}) {
    for (int64_t cached : {0, 4096, 16384, 65536})
      steps.push_back({.prefill_sequences = 1, .new_tokens = fresh, .cached_tokens = cached});
  }
  for (int64_t fresh : {1024, 4096}) {  // an agent's turn: a short chunk after a long conversation
    for (int64_t cached : {16384, 32768})
      steps.push_back({.prefill_sequences = 1, .new_tokens = fresh, .cached_tokens = cached});
  }
  const std::pair<int64_t, int64_t> decodes[] = {
      {1, 1024},   {1, 8192},   {1, 32768},  {4, 16384}, {4, 40960},  {8, 1024},    {8, 8192},
      {8, 32768},  {16, 16384}, {16, 32768}, {24, 24576}, {32, 1024}, {32, 4096},   {32, 16384},
      {64, 2048},  {64, 8192},  {128, 1024}, {128, 4096}, {256, 1024}, {256, 2048}};
  for (auto [batch, context] : decodes)
    steps.push_back({.decode_sequences = batch, .decode_context = context});
  steps.push_back(
      {.prefill_sequences = 1, .new_tokens = 512, .decode_sequences = 128, .decode_context = 1024});
  steps.push_back({.prefill_sequences = 1,
                   .new_tokens = 2048,
                   .cached_tokens = 8192,
                   .decode_sequences = 32,
                   .decode_context = 4096});
  steps.push_back({.prefill_sequences = 1,
                   .new_tokens = 8192,
                   .cached_tokens = 32768,
                   .decode_sequences = 64,
                   .decode_context = 1024});
  steps.push_back({.prefill_sequences = 2,
                   .new_tokens = 1024,
                   .cached_tokens = 2048,
                   .decode_sequences = 16,
                   .decode_context = 8192});
  steps.push_back({.prefill_sequences = 1,
                   .new_tokens = 2048,
                   .cached_tokens = 24576,
                   .decode_sequences = 15,
                   .decode_context = 24576});
  steps.push_back({.decode_sequences = 1, .decode_context = 16});  // the near-empty step: the overhead
  std::erase_if(steps, [&](const StepSample& s) { return s.kv_tokens() > kv_tokens_available; });
  return steps;
}

namespace {

// The samples with the boost-clock times of the steps that heat the GPU, each timed from a cool GPU. A
// step's attention timed alone stays as measured: without the linear layers beside it the launch does not
// draw the GPU to its power limit (results/validation/h200/attention-alone/), so it runs at the boost clock
// even where the whole step slows.
std::vector<StepSample> at_boost_clock(std::vector<StepSample> samples, const std::vector<bool>& heats,
                                       const PowerThrottle& throttle) {
  for (size_t i = 0; i < samples.size(); ++i) {
    if (!heats[i]) continue;
    StepSample& s = samples[i];
    if (s.prefill_sequences == 0) {
      s.seconds = unthrottled_seconds(throttle, s.seconds);
      continue;
    }
    // The measured share of attention stands for its share at the boost clock (power_throttle.h).
    const double share = std::clamp(s.attention_seconds / s.seconds, 0.0, 1.0);
    s.seconds = unthrottled_seconds(throttle, s.seconds, share);
  }
  return samples;
}

std::vector<bool> heating_steps(const CostModel& cost, const std::vector<StepSample>& samples) {
  std::vector<bool> heats;
  for (const StepSample& s : samples) heats.push_back(cost.compute_bound(s.work()));
  return heats;
}

// The costs at the boost clock: the attention model (or formula), the overhead and the linear rate.
StepCosts fit_boost_costs(const ModelCard& model, const HardwareConfig& hardware, double kv_bytes_per_token,
                          const std::vector<StepSample>& samples,
                          const std::optional<AttentionCosts>& attention_tiling) {
  const CostModel base(model, hardware, kv_bytes_per_token);
  std::vector<StepTerms> terms;
  bool has_prefill = false, has_decode = false;
  for (const StepSample& s : samples) {
    terms.push_back(base.step_terms(s.work()));
    has_prefill |= terms.back().attention_flops > 0;
    has_decode |= terms.back().decode_kv_bytes > 0;
  }
  if (!has_prefill || !has_decode)
    throw std::invalid_argument("step fit: needs both prefill steps and decode steps with context");
  const std::optional<AttentionCosts> attention = fit_attention(model, samples, attention_tiling);
  const double hbm_rate = base.achieved_hbm_bandwidth();
  Unknowns x{};
  x[1] = 1 / base.peak_flops();  // start from every linear layer at peak: compute-bound where it can be
  std::vector<bool> compute_bound;
  for (int round = 0; round < 20; ++round) {
    std::vector<bool> regime;
    for (const StepTerms& t : terms) regime.push_back(t.linear_flops * x[1] >= t.weight_bytes / hbm_rate);
    if (regime == compute_bound) break;
    compute_bound = regime;
    x = non_negative_least_squares(relative_rows(terms, samples, hbm_rate, compute_bound, attention.has_value()));
  }
  require_determined(x[1], "the linear layers' rate");
  StepCosts costs{
      .step_overhead_s = x[0], .linear_mfu = 1 / (base.peak_flops() * x[1]), .attention = attention};
  if (!attention) {
    require_determined(x[2], "prefill attention's rate");
    require_determined(x[4], "decode attention's bandwidth");
    costs.attention_mfu = 1 / (base.peak_flops() * x[2]);
    costs.attention_half_rate_keys = x[3] / x[2];
    costs.attention_half_rate_queries = x[5] / x[2];
    costs.attention_bandwidth_efficiency = 1 / (base.hbm_bandwidth() * x[4]);
  }
  return costs;
}

}  // namespace

// Back to back from a cool GPU, GpuHeat runs the steps before the onset at the boost clock, the part of
// the step that crosses it past the onset slowed, and every later step slowed throughout: for one onset
// each step's cool part is fixed and its time linear in the slowdown, so the best slowdown on the 0.25 %
// grid is the grid point nearest the least-squares one, and the search is over the onset alone.
PowerThrottle fit_throttle(const std::vector<double>& seconds) {
  if (seconds.size() < 8) throw std::invalid_argument("throttle fit: needs at least 8 steps");
  for (double t : seconds) {
    if (!(std::isfinite(t) && t > 0))
      throw std::invalid_argument("throttle fit: a step time is not positive");
  }
  const double boost = *std::min_element(seconds.begin(), seconds.begin() + 3);
  const double total = std::accumulate(seconds.begin(), seconds.end(), 0.0);
  constexpr double kStep = 0.0025;
  constexpr int kMostSteps = 200;
  PowerThrottle best{};
  double best_error = std::numeric_limits<double>::infinity();
  for (int ms = 0; ms <= static_cast<int>(total * 1e3); ++ms) {
    const double onset = ms * 1e-3;
    // Step i takes cool + slowed × slowdown; with y = seconds − cool, the squared error is
    // Σy² − 2 slowdown Σ(slowed·y) + slowdown² Σslowed².
    double heat = 0, aa = 0, ay = 0, yy = 0;
    for (double t : seconds) {
      const double cool = std::clamp(onset - heat, 0.0, boost);
      heat = std::min(onset, heat + cool);
      const double slowed = boost - cool, y = t - cool;
      aa += slowed * slowed, ay += slowed * y, yy += y * y;
    }
    const double least_squares = aa > 0 ? ay / aa : 1;
    const int k = std::clamp(static_cast<int>(std::lround((least_squares - 1) / kStep)), 0, kMostSteps);
    const double slowdown = 1 + kStep * k;
    const double error = yy - 2 * slowdown * ay + slowdown * slowdown * aa;
    if (error < best_error) best = {onset, slowdown}, best_error = error;
  }
  return best;
}

PowerThrottle fit_long_step_throttle(const std::vector<double>& seconds, double onset_s) {
  if (seconds.size() < 8) throw std::invalid_argument("throttle fit: needs at least 8 steps");
  if (!(onset_s > 0)) throw std::invalid_argument("throttle fit: the onset must be positive");
  for (double t : seconds) {
    if (!(std::isfinite(t) && t > 0))
      throw std::invalid_argument("throttle fit: a step time is not positive");
  }
  const double rest = std::accumulate(seconds.begin() + 1, seconds.end(), 0.0) / (seconds.size() - 1);
  return {.onset_s = onset_s, .slowdown = std::max(1.0, (onset_s + rest - seconds.front()) / onset_s)};
}

PowerThrottle split_throttle(const PowerThrottle& chunk, double chunk_share, const PowerThrottle& attention,
                             double attention_share) {
  if (!(attention_share > chunk_share))
    throw std::invalid_argument(
        "throttle fit: the attention run's step must be more attention than the chunk");
  // chunk.slowdown = s + (a - s) chunk_share and attention.slowdown = s + (a - s) attention_share.
  const double difference = (attention.slowdown - chunk.slowdown) / (attention_share - chunk_share);
  const double slowdown = std::max(1.0, chunk.slowdown - difference * chunk_share);
  return {.onset_s = chunk.onset_s,
          .slowdown = slowdown,
          .attention_slowdown = std::max(1.0, slowdown + difference)};
}

StepFit fit_step_costs(const ModelCard& model, const HardwareConfig& hardware, double kv_bytes_per_token,
                       const std::vector<StepSample>& measured,
                       const std::optional<AttentionCosts>& attention_tiling,
                       const std::optional<PowerThrottle>& throttle) {
  for (const StepSample& s : measured) {
    if (!(std::isfinite(s.seconds) && s.seconds > 0))
      throw std::invalid_argument("step fit: a measured step time is not a positive number of seconds");
  }
  // Which steps heat the GPU depends on the fitted linear rate: from the hardware file's, until it holds.
  std::vector<bool> heats(measured.size(), false);
  if (throttle) heats = heating_steps(CostModel(model, hardware, kv_bytes_per_token), measured);
  StepCosts costs;
  std::vector<StepSample> samples = measured;
  for (int round = 0; round < 5; ++round) {
    if (throttle) samples = at_boost_clock(measured, heats, *throttle);
    costs = fit_boost_costs(model, hardware, kv_bytes_per_token, samples, attention_tiling);
    if (!throttle) break;
    const std::vector<bool> fitted =
        heating_steps(CostModel(model, hardware, kv_bytes_per_token, costs), measured);
    if (fitted == heats) break;
    heats = fitted;
  }
  costs.throttle = throttle;
  StepFit fit;
  fit.costs = costs;
  const CostModel fitted(model, hardware, kv_bytes_per_token, costs);
  const PowerThrottle none{};
  for (size_t i = 0; i < measured.size(); ++i) {
    const StepWork work = measured[i].work();
    GpuHeat step(throttle.value_or(none));
    fit.predicted_seconds.push_back(
        step.run(fitted.step_seconds(work), heats[i], fitted.prefill_attention_seconds(work)));
    if (costs.attention) {
      fit.predicted_attention_seconds.push_back(fitted.block_attention_seconds(work));
    }
  }
  return fit;
}

nlohmann::json step_measurements_json(const std::vector<StepSample>& samples, const StepFit& fit) {
  nlohmann::json steps = nlohmann::json::array();
  for (size_t i = 0; i < samples.size(); ++i) {
    const StepSample& s = samples[i];
    steps.push_back({{"kind", s.kind()},
                     {"prefill_sequences", s.prefill_sequences},
                     {"new_tokens", s.new_tokens},
                     {"cached_tokens", s.cached_tokens},
                     {"decode_sequences", s.decode_sequences},
                     {"decode_context", s.decode_context},
                     {"seconds", s.seconds},
                     {"predicted_seconds", fit.predicted_seconds[i]},
                     {"residual_seconds", s.seconds - fit.predicted_seconds[i]}});
    if (!fit.predicted_attention_seconds.empty()) {
      steps.back()["attention_seconds"] = s.attention_seconds;
      steps.back()["predicted_attention_seconds"] = fit.predicted_attention_seconds[i];
    }
  }
  return steps;
}

}  // namespace kvtier::hw
