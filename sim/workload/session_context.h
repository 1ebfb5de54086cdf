// The growing context of one agent session, and the block ids of each turn's input.
//
// An agent turn's input is most of the previous turn's context (its input and output) followed by new
// tokens: a tool result, a user message, or a re-rendered tail. SessionContext keeps that context as
// named segments (block_chain.h) and, for each turn, returns the chained block ids of the new input,
// recomputing only the blocks past the kept prefix: a 200K-token context that grows by 2K tokens costs a
// few blocks of hashing, not hundreds. The native trace reader and the synthetic generator share it.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "sim/workload/block_chain.h"

namespace kvtier {

// Content keys for the segments of native traces and generated sessions.
uint64_t prefix_key(std::string_view prefix_name);  // a shared prefix, the same in every session naming it
uint64_t turn_input_key(uint64_t session_key, int32_t turn);
uint64_t turn_output_key(uint64_t session_key, int32_t turn);

class SessionContext {
 public:
  explicit SessionContext(int64_t block_tokens) : block_tokens_(block_tokens) {}

  // The next turn's input: the first `keep_tokens` of the context so far, then `appended`.
  // Returns its block ids, valid until the next call.
  // REQUIRES: 0 <= keep_tokens <= context_tokens(); every appended segment has tokens > 0.
  const std::vector<uint64_t>& next_input(int64_t keep_tokens, const std::vector<Segment>& appended);
  // The response to the last input joins the context.
  void add_output(uint64_t key, int64_t tokens);

  int64_t context_tokens() const { return context_tokens_; }
  int64_t input_tokens() const { return input_tokens_; }
  int64_t block_tokens() const { return block_tokens_; }
  // How many leading ids of the last input were kept from the input before it (not recomputed).
  size_t reused_blocks() const { return reused_blocks_; }

 private:
  void truncate(int64_t keep_tokens);

  int64_t block_tokens_;
  std::vector<Segment> segments_;
  int64_t context_tokens_ = 0;
  int64_t input_tokens_ = 0;
  std::vector<uint64_t> ids_;  // of the last input
  size_t reused_blocks_ = 0;
};

}  // namespace kvtier
