#include "hw/serve/step_runner.h"

#include <chrono>
#include <stdexcept>

#include "hw/gpu/check.h"
#include "hw/model/prompt_tokens.h"

namespace kvtier::hw {

StepRunner::StepRunner(TransformerForward& forward, gpuStream_t stream, BlockPages block_pages,
                       int64_t first_decode_page, int64_t decode_pages)
    : forward_(forward),
      stream_(stream),
      block_pages_(std::move(block_pages)),
      first_decode_page_(first_decode_page),
      decode_pages_(decode_pages) {
  if (decode_pages_ < 1) throw std::invalid_argument("step runner: at least one decode page is needed");
}

int64_t StepRunner::decode_page(uint64_t request_id, int64_t index) {
  std::vector<int64_t>& pages = decode_pages_of_[request_id];
  while (static_cast<int64_t>(pages.size()) <= index) {
    pages.push_back(first_decode_page_ + next_decode_page_);
    next_decode_page_ = (next_decode_page_ + 1) % decode_pages_;
  }
  return pages[static_cast<size_t>(index)];
}

void StepRunner::add_sequence(uint64_t request_id, int new_tokens, int64_t context_tokens) {
  const int64_t block_tokens = forward_.config().block_tokens;
  const std::vector<int64_t>& blocks = block_pages_(request_id);
  const int64_t positions = context_tokens + new_tokens;
  const int64_t pages_needed = (positions + block_tokens - 1) / block_tokens;
  HostSequence seq{new_tokens, static_cast<int>(context_tokens), {}};
  seq.pages.reserve(static_cast<size_t>(pages_needed));
  for (int64_t p = 0; p < pages_needed; ++p) {
    const auto block = static_cast<size_t>(p);
    seq.pages.push_back(static_cast<int>(
        block < blocks.size() ? blocks[block] : decode_page(request_id, p - static_cast<int64_t>(blocks.size()))));
  }
  sequences_.push_back(std::move(seq));
  append_prompt_tokens(token_ids_, request_id, context_tokens, new_tokens, forward_.config().shape.vocab);
}

double StepRunner::run(const StepPlan& plan) {
  sequences_.clear();
  token_ids_.clear();
  for (const DecodeWork& d : plan.decodes) add_sequence(d.request_id, 1, d.context_tokens);
  for (const PrefillChunk& c : plan.prefills)
    add_sequence(c.request_id, static_cast<int>(c.tokens), c.start_token);
  const auto start = std::chrono::steady_clock::now();
  forward_.step(sequences_, token_ids_);
  KVTIER_GPU_CHECK(gpuStreamSynchronize(stream_));
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void StepRunner::forget(uint64_t request_id) {
  decode_pages_of_.erase(request_id);
}

}  // namespace kvtier::hw
