// Runs the scheduler's step plans (sim/serving/step_plan.h) as real forward passes on the GPU.
//
// A plan names sequences and token counts; the forward pass (hw/model/forward.h) needs, per sequence, the
// pool pages that hold its KV position by position. Positions inside the request's cached blocks use the
// HBM pages the store placed them in (one block of the cache = one page); positions past them (the tail of
// a prompt that fills no whole block, and decoded tokens) use pages set aside for decode. When more decode
// pages are needed than were set aside, sequences share them: timing depends on the shapes, not on the
// values, and decode tokens are a small part of each context.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <unordered_map>
#include <vector>

#include "hw/model/forward.h"
#include "sim/serving/step_plan.h"

namespace kvtier::hw {

class StepRunner {
 public:
  // Pages [first_decode_page, first_decode_page + decode_pages) of the forward's pool are set aside for
  // decode; `block_pages(request)` gives the HBM page of each cached block of an admitted request.
  using BlockPages = std::function<const std::vector<int64_t>&(uint64_t request_id)>;
  StepRunner(TransformerForward& forward, gpuStream_t stream, BlockPages block_pages, int64_t first_decode_page,
             int64_t decode_pages);

  // Runs the plan's forward pass and waits for it; returns its wall time in seconds.
  double run(const StepPlan& plan);
  // The request left: its decode pages go back.
  void forget(uint64_t request_id);

 private:
  void add_sequence(uint64_t request_id, int new_tokens, int64_t context_tokens);
  int64_t decode_page(uint64_t request_id, int64_t index);

  TransformerForward& forward_;
  gpuStream_t stream_;
  BlockPages block_pages_;
  int64_t first_decode_page_;
  int64_t decode_pages_;
  int64_t next_decode_page_ = 0;  // round robin: pages are shared once all are taken
  std::unordered_map<uint64_t, std::vector<int64_t>> decode_pages_of_;
  std::vector<HostSequence> sequences_;
  std::vector<int> token_ids_;
};

}  // namespace kvtier::hw
