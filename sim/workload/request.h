// A request as every part of kvtier sees it: the trace readers produce it, the replay drivers issue it,
// the cache model and the serving engine consume it.
//
// block_ids is the request's prefix chain in the scenario's block size: block i covers tokens
// [i × block_tokens, (i + 1) × block_tokens) of the input, and equal ids mean equal content *and* equal
// prefix (an id names the whole chain up to and including its block). The last block may be partial.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kvtier {

struct Request {
  uint64_t id = 0;          // unique within a replay, in issue order
  double arrival_s = 0;     // open loop: offset from the trace start
  int64_t session_id = -1;  // -1 when the trace has no sessions
  int32_t turn = 0;         // 0-based turn within the session
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  double think_time_s = 0;  // closed loop: pause after this turn completes, before the next
  std::vector<uint64_t> block_ids;
  // How many leading block ids are known to equal those of the previous request with the same
  // session_id (0 when nothing is known). A reader that builds a turn on its session's context knows
  // this for free; trace statistics use it to skip rescanning the shared prefix. Never more than the
  // true shared length.
  size_t same_as_previous_turn = 0;
  // Disaggregated serving: the request was prefilled on another instance, whose first token and KV
  // arrive with it (the scheduler waits for the KV instead of prefilling).
  bool prefilled_elsewhere = false;
};

}  // namespace kvtier
