// The cost model's serving terms (StepCosts, sim/core/cost_model.h) fitted to timed forward-pass steps.
//
// `kvtier-hw calibrate --steps` times real TransformerForward steps (step_probe.h): prefill chunks after
// cached contexts, decode batches, mixed steps and a near-empty step. Each step's time is, by the cost
// model,
//   overhead + max(linear FLOPs × u_linear, weight bytes / HBM rate) + attention FLOPs × u_attention
//   + attention FLOPs per key × v_attention + attention FLOPs per query × w_attention + decode KV bytes × u_kv
// which is linear in the unknowns (overhead, u_linear, u_attention, v_attention, u_kv, w_attention) once
// each step is known to be compute- or memory-bound in its linear layers. The fit alternates: classify the
// steps by the current u_linear, then solve non-negative least squares on the relative error (every subset
// of free unknowns, at most 2^6 small solves), until the classification stops changing. The rates follow:
// linear_mfu = 1 / (peak × u_linear), attention_mfu = 1 / (peak × u_attention), attention_half_rate_keys =
// v_attention / u_attention, attention_half_rate_queries = w_attention / u_attention,
// attention_bandwidth_efficiency = 1 / (HBM × u_kv). The weights' HBM rate is
// the hardware's memory_bandwidth_efficiency (calibrate measures it by a device copy), not fitted: decode
// of a few sequences cannot tell it from the overhead. CPU-only, so CI tests it.
//
// Where the probe also timed each step's attention alone and the attention model describes the kernel
// (CUDA), attention is priced by that model instead (StepCosts::attention, sim/core/attention_cost.h,
// fitted by attention_fit.h), and only the overhead and u_linear are solved for here, on each step's
// time less its measured attention; the formula's attention unknowns stay 0.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "sim/core/attention_cost.h"
#include "sim/core/cost_model.h"
#include "sim/core/hardware.h"
#include "sim/core/model_card.h"
#include "sim/core/power_throttle.h"

namespace kvtier::hw {

// What the GPU does for `seconds` before each timed step. A GPU at its power limit lowers its clock, so a
// step timed right after a heavy one runs slower than the same step in serving, where lighter steps come
// between (on the H200, 1.6-1.8 GHz back to back against 1.98 GHz); an idle GPU lowers its clock too, and
// takes a moment to raise it again. kIdle sleeps; kLight runs decode steps of one sequence (a light,
// memory-bound step, as a serving loop runs between its prefills), which keep the clock up at low power.
enum class StepGapKind { kIdle, kLight };
struct StepGap {
  StepGapKind kind = StepGapKind::kIdle;
  double seconds = 0;  // 0: back to back
};
// "idle", "light".
inline const char* step_gap_name(StepGapKind kind) {
  return kind == StepGapKind::kLight ? "light" : "idle";
}
// The kind step_gap_name names; nullopt for any other text.
inline std::optional<StepGapKind> step_gap_kind(const std::string& name) {
  for (StepGapKind kind : {StepGapKind::kIdle, StepGapKind::kLight}) {
    if (name == step_gap_name(kind)) return kind;
  }
  return std::nullopt;
}

// One timed step: `prefill_sequences` sequences each with `new_tokens` after `cached_tokens`, beside
// `decode_sequences` sequences each decoding one token after `decode_context` tokens.
struct StepSample {
  int64_t prefill_sequences = 0;
  int64_t new_tokens = 0;
  int64_t cached_tokens = 0;
  int64_t decode_sequences = 0;
  int64_t decode_context = 0;
  double seconds = 0;            // measured, whole; 0 until the probe times it
  double attention_seconds = 0;  // its attention alone, every layer; 0 when not timed

  StepWork work() const;
  // The step's sequences as its attention launch takes them: the decodes, then the prefill chunks (the
  // serving loop's order, StepRunner::run).
  std::vector<AttentionSequence> attention_sequences() const;
  const char* kind() const;  // "prefill", "decode" or "mixed"
  // KV tokens of the step, every sequence its own pages: what the probe's pool must hold.
  int64_t kv_tokens() const;
};

// A step written NEW:CACHED or NEW:CACHED:DECODES:CONTEXT (tokens; one prefill sequence of NEW after
// CACHED, beside DECODES sequences decoding after CONTEXT each), as `kvtier-hw calibrate
// --throttle-attention-step` takes it. Throws std::invalid_argument saying what was expected.
StepSample parse_step_shape(const std::string& text);

// The steps calibrate times, in order: prefill n in {512, 2K, 8K, 16K} after c in {0, 4K, 16K, 64K} and
// n in {1K, 4K} after c in {16K, 32K} (agent turns), decode batches of 1 to 256 at 1K to 40K, five mixed
// steps and one near-empty step (1 token after 16); those needing more than `kv_tokens_available` KV tokens
// are left out.
std::vector<StepSample> probe_steps(int64_t kv_tokens_available);

struct StepFit {
  StepCosts costs;
  std::vector<double> predicted_seconds;            // per sample: CostModel with `costs`
  std::vector<double> predicted_attention_seconds;  // per sample, with an attention model: its attention
};

// The power throttle (power_throttle.h) that best explains `seconds`: the times of back-to-back,
// identical compute-bound steps from a cool GPU (the probe's throttle run, step_probe.h). The boost-clock
// time is the fastest of the first three; the onset (to the millisecond) and the slowdown (to 0.25 %) are
// searched for the least squared error of GpuHeat's times (at most 1.5x). Throws std::invalid_argument for
// fewer than 8 steps or a time that is not positive.
PowerThrottle fit_throttle(const std::vector<double>& seconds);

// The slowdown of back-to-back identical steps from a cool GPU that are each longer than the throttle's
// `onset_s` (known from fit_throttle): the first takes onset + (boost - onset) x slowdown, the rest (their
// mean) boost x slowdown, so slowdown = (onset + mean - first) / onset, at least 1. Throws
// std::invalid_argument for fewer than 8 steps, a time that is not positive, or an onset not positive.
PowerThrottle fit_long_step_throttle(const std::vector<double>& seconds, double onset_s);

// The throttle of two throttle runs fitted alone: `chunk`, of a prefill chunk whose boost-clock time is
// `chunk_share` prefill attention, and `attention`, of a step that is more attention (`attention_share`).
// Each run's slowdown is taken as the two factors mixed by its share (PowerThrottle::slowdown_of), solved
// for both (neither below 1); the onset is the chunk run's. Throws std::invalid_argument unless
// attention_share > chunk_share.
PowerThrottle split_throttle(const PowerThrottle& chunk, double chunk_share, const PowerThrottle& attention,
                             double attention_share);

// With `throttle`, every sample is taken to start from a cool GPU: the compute-bound steps' times are turned
// into their boost-clock times before the fit (unthrottled_seconds), the costs carry the throttle, and the
// predictions are the throttled times. A step's attention timed alone is taken at the boost clock as
// measured (alone, the launch does not reach the power limit), and predicted so.
//
// With `attention_tiling` (the forward pass's, step_probe.h) and every sample's attention timed, the
// attention model's kernel costs are fitted to the attention launches (attention_fit.h), and the overhead
// and linear rate to what each step took beside its measured attention; the formula's attention terms are
// then not fitted (0). Without, the formula is fitted as above. Throws std::invalid_argument when the
// samples lack prefill or decode steps, a measured time is not positive, or a rate fits as zero (the
// measurements do not determine it).
StepFit fit_step_costs(const ModelCard& model, const HardwareConfig& hardware, double kv_bytes_per_token,
                       const std::vector<StepSample>& samples,
                       const std::optional<AttentionCosts>& attention_tiling = std::nullopt,
                       const std::optional<PowerThrottle>& throttle = std::nullopt);

// The samples as the calibration file's measurements.steps: each with what ran, the measured and predicted
// seconds and the residual (measured - predicted), and where timed the attention's measured and predicted
// seconds.
nlohmann::json step_measurements_json(const std::vector<StepSample>& samples, const StepFit& fit);

}  // namespace kvtier::hw
