// Token ids for the forward pass's synthetic prompts and decoded tokens.
//
// The weights are random, so the values a forward pass computes do not matter, but their spread does: a
// GPU's power draw follows the bits its tensor cores toggle. A batch of one repeated token makes every row
// of every activation the same (causal attention averages identical value rows), so the GPU draws less
// power and holds a higher clock than over a real prompt. Every forward pass of kvtier-hw is therefore fed
// varied ids: a hash of the sequence and the position, spread over the vocabulary, the same on every run.
#pragma once

#include <cstdint>
#include <vector>

namespace kvtier::hw {

inline int prompt_token(uint64_t sequence, int64_t position, int vocab) {
  uint64_t x = sequence * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(position);  // splitmix64's mixer
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  x ^= x >> 31;
  return static_cast<int>(x % static_cast<uint64_t>(vocab));
}

// Appends the ids of positions [first_position, first_position + count) of `sequence`.
inline void append_prompt_tokens(std::vector<int>& ids, uint64_t sequence, int64_t first_position,
                                 int64_t count, int vocab) {
  for (int64_t position = first_position; position < first_position + count; ++position)
    ids.push_back(prompt_token(sequence, position, vocab));
}

}  // namespace kvtier::hw
