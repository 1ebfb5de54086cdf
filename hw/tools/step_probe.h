// Times real forward-pass steps for the serving fit (step_fit.h): what `kvtier-hw calibrate --steps`
// measures, so that the cost model prices the steps the serving loop runs rather than bare GEMMs.
//
// One TransformerForward of the model's shape (random bf16 weights, a random bf16 KV pool of pages of
// block_tokens tokens: the serving scenario's block size, since attention over 16-token pages runs ~15 %
// slower than over 256-token ones) runs each of probe_steps(): prefill chunks after cached contexts, decode batches, mixed steps and
// a near-empty step. Every sequence of a step has its own pages, so that decode reads as many distinct KV
// bytes as a real batch would (shared pages would hit in L2). The pool takes what HBM holds after the
// weights and 8 GiB for activations, at most 640K tokens; steps needing more are left out. Each step is
// timed twice, a warm-up then the median of 5 runs (3 for steps of 8K new tokens or more): whole, on the
// host clock from the call to an idle stream, as the serving loop times its steps; and its attention
// alone (every layer's launch, TransformerForward::attention), by device events (event_timer.h).
// For Llama-3.1-8B on an H200 the cost model puts a pass at about 12 s: two minutes in all.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "hw/model/transformer_shape.h"
#include "hw/tools/step_fit.h"
#include "sim/core/attention_cost.h"

namespace kvtier::hw {

// True when this build has the forward pass (a vendor BLAS).
bool step_probe_available();
struct StepProbe {
  // With the throttle run: back-to-back prefill chunks of kThrottleChunkTokens from a cool GPU (after 2 s
  // idle), each one's time, for the run's seconds: what the GPU's power throttle does to a sustained load
  // (fit_throttle).
  std::vector<double> throttle_seconds;
  // With the attention run: its step (kAttentionThrottleStep unless another is asked for) back to back
  // the same way, after as long idle as the throttle run ran (at least 2 s): the prefill attention's own
  // slowdown (fit_long_step_throttle, split_throttle).
  std::vector<double> attention_throttle_seconds;
  std::vector<StepSample> steps;  // the probe's steps with their measured seconds
};
inline constexpr int64_t kThrottleChunkTokens = 4096;
// A chunk after 32K cached tokens: 62 % of its time attention on the H200 (236 ms, 147 of them the
// attention), where the throttle run's chunk (after none) is 4 %. Its GEMMs hold the GPU at its power
// limit, so its attention runs at the lowered clock: a step of attention alone (512 tokens after 16K) ran
// back to back for 10 s without slowing at all. It is longer than the onset (fit_long_step_throttle).
inline constexpr StepSample kAttentionThrottleStep{
    .prefill_sequences = 1, .new_tokens = kThrottleChunkTokens, .cached_tokens = 32768};

// The back-to-back runs before the probe's steps: `seconds` each (none at 0), the attention one with its
// step when asked.
struct ThrottleRuns {
  double seconds = 0;
  std::optional<StepSample> attention;
};

// The throttle runs, then the probe's steps and `extra` (the caller's shapes), every timed run after `gap`.
// With a throttle run, a gap of more than 0 is lengthened to let the GPU cool from the run before (by the
// run's own time, up to the throttle's onset), so that every run starts cool, as the step fit then takes
// them. Throws std::runtime_error without a forward pass, or when a step of `extra` needs more KV than the
// pool holds.
StepProbe measure_steps(const TransformerShape& shape, int block_tokens, StepGap gap, ThrottleRuns throttle,
                        const std::vector<StepSample>& extra = {});
// How the forward pass's attention cuts its launches on this device (attention.h), for the attention fit;
// nullopt without a forward pass or where the cost model does not describe the kernel (HIP).
std::optional<AttentionCosts> attention_tiling(const TransformerShape& shape, int block_tokens);

}  // namespace kvtier::hw
