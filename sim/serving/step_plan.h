// What the scheduler hands its driver each engine iteration: a step to run, or a reason to wait.
//
// A step plan is a value a GPU loop can execute: which sequences decode (one token each, over how much
// context), and which prefill chunks run beside them (how many tokens after how many whose KV exists,
// oldest request first). Under layer-wise overlap a chunk may run while its request's load is still in
// flight: layer l of the chunk needs layer l of that load. Otherwise every sequence in a plan has its KV in
// HBM. `seconds` is the cost model's time for the step: the simulator sleeps that long; a GPU loop runs the
// work and measures.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "sim/serving/serving_backend.h"

namespace kvtier {

struct DecodeWork {
  uint64_t request_id = 0;
  int64_t context_tokens = 0;  // KV the new token attends to
};

struct PrefillChunk {
  uint64_t request_id = 0;
  int64_t start_token = 0;  // tokens whose KV already exists (cached or prefilled)
  int64_t tokens = 0;       // positive
  std::optional<LoadHandle> overlapped_load;  // layer-wise overlap: the load still landing under it
};

struct StepPlan {
  std::vector<DecodeWork> decodes;      // in batch order
  std::vector<PrefillChunk> prefills;   // in batch order, which is arrival order
  int64_t tokens = 0;                   // decodes plus chunk tokens; a planned step always has some
  double compute_s = 0;                 // the cost model's time for the work
  double conversion_s = 0;              // (de)quantizing what transfers moved since the previous step
  double seconds = 0;                   // compute_s + conversion_s
  // With a power-throttled cost model (StepCosts::throttle): whether the work heats the GPU (its linear
  // layers bound by FLOPs), so that a simulated run slows it as the GPU heats. Otherwise false.
  bool heats_gpu = false;
  // When it heats the GPU and the throttle slows attention by its own factor: the part of compute_s that
  // is prefill attention. Otherwise 0.
  double prefill_attention_s = 0;
};

struct Decision {
  enum class Kind {
    kStep,      // run `step`, then call Scheduler::finish_step()
    kRejected,  // a request that can never fit was rejected; decide again
    kWait,      // nothing can run: wait for the next arrival or for a transfer to end
  };
  Kind kind = Kind::kWait;
  StepPlan step;                            // kStep
  std::vector<LoadHandle> awaited_loads;    // kWait: loads of admitted requests, in batch order
  std::optional<double> next_arrival_s;     // kWait: when the next request is ready, if one is known
};

}  // namespace kvtier
