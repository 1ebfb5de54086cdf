#include "sim/workload/session_context.h"

#include <algorithm>

namespace kvtier {

uint64_t prefix_key(std::string_view prefix_name) {
  // FNV-1a over the name, then mixed: stable across runs, platforms and standard libraries.
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (char c : prefix_name) hash = (hash ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  return mix_ids(hash, 0x70726566ULL);
}

uint64_t turn_input_key(uint64_t session_key, int32_t turn) {
  return mix_ids(mix_ids(session_key, static_cast<uint64_t>(turn)), 1);
}

uint64_t turn_output_key(uint64_t session_key, int32_t turn) {
  return mix_ids(mix_ids(session_key, static_cast<uint64_t>(turn)), 2);
}

void SessionContext::truncate(int64_t keep_tokens) {
  // The most whole segments that fit in keep_tokens, counted from the end: a turn usually keeps most
  // of a context of hundreds of segments.
  int64_t kept = context_tokens_;
  size_t count = segments_.size();
  while (count > 0 && kept > keep_tokens) kept -= segments_[--count].tokens;
  if (kept < keep_tokens) segments_[count++].tokens = keep_tokens - kept;  // a cut segment keeps its key
  segments_.resize(count);
  context_tokens_ = keep_tokens;
}

const std::vector<uint64_t>& SessionContext::next_input(int64_t keep_tokens,
                                                        const std::vector<Segment>& appended) {
  // Blocks that lay wholly inside the previous input and wholly inside the kept prefix are unchanged.
  size_t unchanged = static_cast<size_t>(std::min(keep_tokens, input_tokens_) / block_tokens_);
  truncate(keep_tokens);
  for (const Segment& s : appended) {
    segments_.push_back(s);
    context_tokens_ += s.tokens;
  }
  input_tokens_ = context_tokens_;
  size_t previous_blocks = ids_.size();
  chain_blocks(segments_, block_tokens_, std::min(unchanged, previous_blocks), ids_);
  reused_blocks_ = std::min({unchanged, previous_blocks, ids_.size()});
  return ids_;
}

void SessionContext::add_output(uint64_t key, int64_t tokens) {
  if (tokens <= 0) return;
  segments_.push_back({key, tokens});
  context_tokens_ += tokens;
}

}  // namespace kvtier
