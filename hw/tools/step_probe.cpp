#include "hw/tools/step_probe.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

#if defined(KVTIER_GPU_CUDA) || defined(KVTIER_HAVE_HIPBLAS)
#define KVTIER_HAVE_FORWARD 1
#include "hw/gpu/check.h"
#include "hw/gpu/device_buffer.h"
#include "hw/model/attention.h"
#include "hw/model/forward.h"
#include "hw/model/prompt_tokens.h"
#include "hw/tools/event_timer.h"
#endif

namespace kvtier::hw {

bool step_probe_available() {
#if defined(KVTIER_HAVE_FORWARD)
  return true;
#else
  return false;
#endif
}

#if defined(KVTIER_HAVE_FORWARD)
namespace {

constexpr int64_t kMostKvTokens = int64_t{640} * 1024;
constexpr double kActivationReserve = 8.0 * (1ull << 30);

int64_t pages_for(int64_t tokens, int block_tokens) {
  return (tokens + block_tokens - 1) / block_tokens;
}

// KV tokens the pool can hold beside the weights and the activations.
int64_t pool_tokens(const TransformerShape& shape, int block_tokens) {
  size_t free_bytes = 0, total_bytes = 0;
  KVTIER_GPU_CHECK(gpuMemGetInfo(&free_bytes, &total_bytes));
  const double weights = 2.0 * (static_cast<double>(shape.linear_params_per_layer()) * shape.layers +
                                2.0 * shape.vocab * shape.hidden);
  const double pages = (static_cast<double>(free_bytes) - weights - kActivationReserve) /
                       static_cast<double>(forward_kv_geometry(shape, block_tokens).page_bytes());
  return std::clamp<int64_t>(static_cast<int64_t>(pages) * block_tokens, 0, kMostKvTokens);
}

// Wall time of `enqueue` until its stream is idle, as the serving loop sees a step (StepRunner::run): the
// median of `runs` after a warm-up, each after `before_each()` (the gap). Unlike device events it includes
// what the host spends before the kernels start: building and uploading the batch, the launches the GPU
// catches up with.
template <typename Enqueue, typename Before>
double median_host_seconds(gpuStream_t stream, Enqueue enqueue, int runs, Before before_each) {
  enqueue();
  KVTIER_GPU_CHECK(gpuStreamSynchronize(stream));
  std::vector<double> seconds;
  for (int run = 0; run < runs; ++run) {
    before_each();
    const auto start = std::chrono::steady_clock::now();
    enqueue();
    KVTIER_GPU_CHECK(gpuStreamSynchronize(stream));
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::nth_element(seconds.begin(), seconds.begin() + runs / 2, seconds.end());
  return seconds[static_cast<size_t>(runs / 2)];
}

// The gap before a timed step: a sleep, or decode steps of one sequence at 1K tokens of context on the
// pool's first pages, for `gap.seconds` or, when longer, the time since the last gap ended (the run in
// between) up to `cooling_cap_s`: the time the GPU needs to cool from that run.
class GapBeforeStep {
 public:
  GapBeforeStep(StepGap gap, double cooling_cap_s, TransformerForward& forward, gpuStream_t stream,
                int block_tokens)
      : gap_(gap),
        cooling_cap_s_(cooling_cap_s),
        forward_(forward),
        stream_(stream),
        decode_{{1, 1024, std::vector<int>(static_cast<size_t>(pages_for(1025, block_tokens)))}},
        last_end_(std::chrono::steady_clock::now()) {
    for (size_t p = 0; p < decode_[0].pages.size(); ++p) decode_[0].pages[p] = static_cast<int>(p);
  }

  void operator()() {
    if (gap_.seconds <= 0) return;
    const auto start = std::chrono::steady_clock::now();
    const double ran = std::chrono::duration<double>(start - last_end_).count();
    const double seconds = std::max(gap_.seconds, std::min(ran, cooling_cap_s_));
    if (gap_.kind == StepGapKind::kIdle) {
      std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    } else {
      const int token = 1;
      while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < seconds) {
        forward_.step(decode_, std::span<const int>(&token, 1));
        KVTIER_GPU_CHECK(gpuStreamSynchronize(stream_));
      }
    }
    last_end_ = std::chrono::steady_clock::now();
  }

 private:
  StepGap gap_;
  double cooling_cap_s_;
  TransformerForward& forward_;
  gpuStream_t stream_;
  std::vector<HostSequence> decode_;
  std::chrono::steady_clock::time_point last_end_;
};

// One step's sequences in the serving loop's order, each on its own run of pages from page 0 up.
std::vector<HostSequence> step_sequences(const StepSample& step, int block_tokens) {
  std::vector<HostSequence> sequences;
  int next_page = 0;
  auto add = [&](int64_t fresh, int64_t context) {
    const int pages = static_cast<int>(pages_for(context + fresh, block_tokens));
    HostSequence s{static_cast<int>(fresh), static_cast<int>(context),
                   std::vector<int>(static_cast<size_t>(pages))};
    for (int& page : s.pages) page = next_page++;
    sequences.push_back(std::move(s));
  };
  for (const AttentionSequence& s : step.attention_sequences()) add(s.new_tokens, s.context_tokens);
  return sequences;
}

// From a GPU idle for `idle_s` (after a warm-up), `sequences` as one step back to back for `run_s`, each
// timed on the host.
std::vector<double> back_to_back(TransformerForward& forward, gpuStream_t stream,
                                 const std::vector<HostSequence>& sequences, std::span<const int> tokens,
                                 double idle_s, double run_s) {
  forward.step(sequences, tokens);  // warm-up
  KVTIER_GPU_CHECK(gpuStreamSynchronize(stream));
  std::this_thread::sleep_for(std::chrono::duration<double>(idle_s));
  std::vector<double> seconds;
  const auto begin = std::chrono::steady_clock::now();
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count() < run_s) {
    const auto start = std::chrono::steady_clock::now();
    forward.step(sequences, tokens);
    KVTIER_GPU_CHECK(gpuStreamSynchronize(stream));
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return seconds;
}

// The throttle run, then the attention one when asked for (StepProbe).
void throttle_runs(TransformerForward& forward, gpuStream_t stream, std::span<const int> token_ids,
                   int block_tokens, ThrottleRuns runs, StepProbe& probe) {
  const StepSample chunk{.prefill_sequences = 1, .new_tokens = kThrottleChunkTokens};
  probe.throttle_seconds =
      back_to_back(forward, stream, step_sequences(chunk, block_tokens),
                   token_ids.first(static_cast<size_t>(chunk.work().tokens())), 2.0, runs.seconds);
  if (!runs.attention) return;
  probe.attention_throttle_seconds =
      back_to_back(forward, stream, step_sequences(*runs.attention, block_tokens),
                   token_ids.first(static_cast<size_t>(runs.attention->work().tokens())),
                   std::max(2.0, runs.seconds), runs.seconds);
}

// Room for every one of `steps`.
ForwardConfig forward_config(const TransformerShape& shape, const std::vector<StepSample>& steps,
                             int64_t kv_tokens, int block_tokens) {
  ForwardConfig config{.shape = shape,
                       .block_tokens = block_tokens,
                       .kv_pages = kv_tokens / block_tokens,
                       .max_step_tokens = 1,
                       .max_sequences = 1,
                       .max_pages_per_sequence = 1};
  for (const StepSample& s : steps) {
    config.max_step_tokens = std::max(config.max_step_tokens, static_cast<int>(s.work().tokens()));
    config.max_sequences =
        std::max(config.max_sequences, static_cast<int>(s.prefill_sequences + s.decode_sequences));
    const int64_t longest = std::max(s.prefill_sequences > 0 ? s.cached_tokens + s.new_tokens : 0,
                                     s.decode_sequences > 0 ? s.decode_context + 1 : 0);
    config.max_pages_per_sequence =
        std::max(config.max_pages_per_sequence, static_cast<int>(pages_for(longest, block_tokens)));
  }
  return config;
}

}  // namespace

StepProbe measure_steps(const TransformerShape& shape, int block_tokens, StepGap gap, ThrottleRuns throttle,
                        const std::vector<StepSample>& extra) {
  shape.validate();
  if (block_tokens < 1) throw std::invalid_argument("step probe: block_tokens must be positive");
  const int64_t kv_tokens = pool_tokens(shape, block_tokens);
  auto fits = [&](const StepSample& step) {  // whole pages per sequence may need a few more than kv_tokens()
    return step_sequences(step, block_tokens).back().pages.back() < kv_tokens / block_tokens;
  };
  auto require_fits = [&](const StepSample& step, const std::string& what) {
    if (fits(step)) return;
    throw std::runtime_error("step probe: " + what + " needs " + std::to_string(step.kv_tokens()) +
                             " KV tokens, every sequence its own pages; the probe's pool holds " +
                             std::to_string(kv_tokens) + " (HBM beside the weights, at most " +
                             std::to_string(kMostKvTokens) + "): ask for fewer decodes or shorter contexts");
  };
  std::vector<StepSample> steps = probe_steps(kv_tokens);
  std::erase_if(steps, [&](const StepSample& step) { return !fits(step); });
  if (steps.empty()) throw std::runtime_error("step probe: HBM holds too little KV for any probe step");
  for (const StepSample& step : extra) {
    require_fits(step, "the extra step " + std::to_string(step.new_tokens) + ":" +
                           std::to_string(step.cached_tokens) + ":" + std::to_string(step.decode_sequences) +
                           ":" + std::to_string(step.decode_context));
    steps.push_back(step);
  }
  std::vector<StepSample> sized_for = steps;
  sized_for.push_back({.prefill_sequences = 1, .new_tokens = kThrottleChunkTokens});
  if (throttle.attention) {
    require_fits(*throttle.attention, "the attention throttle run's step");
    sized_for.push_back(*throttle.attention);
  }
  gpu::Stream stream;
  TransformerForward forward(forward_config(shape, sized_for, kv_tokens, block_tokens), stream.get());
  KVTIER_GPU_CHECK(gpuStreamSynchronize(stream.get()));
  std::vector<int> token_ids;
  append_prompt_tokens(token_ids, 0, 0, forward.config().max_step_tokens, shape.vocab);
  StepProbe probe;
  double cooling_cap_s = 0;
  if (throttle.seconds > 0) {
    throttle_runs(forward, stream.get(), token_ids, block_tokens, throttle, probe);
    cooling_cap_s = fit_throttle(probe.throttle_seconds).onset_s;
  }
  GapBeforeStep before_each(gap, cooling_cap_s, forward, stream.get(), block_tokens);
  for (StepSample& step : steps) {
    const std::vector<HostSequence> sequences = step_sequences(step, block_tokens);
    const auto tokens = std::span<const int>(token_ids).first(static_cast<size_t>(step.work().tokens()));
    const int runs = step.new_tokens >= 8192 ? 3 : 5;
    step.seconds = median_host_seconds(
        stream.get(), [&] { forward.step(sequences, tokens); }, runs, before_each);
    step.attention_seconds = median_seconds_after(
        stream.get(), [&] { forward.attention(sequences); }, runs, before_each);
  }
  probe.steps = std::move(steps);
  return probe;
}

std::optional<AttentionCosts> attention_tiling(const TransformerShape& shape, int block_tokens) {
  return paged_attention_tiling(shape.head_dim, shape.heads, shape.kv_heads, block_tokens);
}

#else

StepProbe measure_steps(const TransformerShape&, int, StepGap, ThrottleRuns, const std::vector<StepSample>&) {
  throw std::runtime_error(
      "step probe: this build has no forward pass (hipBLAS was not found at configure time)");
}

std::optional<AttentionCosts> attention_tiling(const TransformerShape&, int) { return std::nullopt; }

#endif

}  // namespace kvtier::hw
