// Block ids that name whole prefixes, in any block size.
//
// A request's input is a sequence of segments: runs of tokens whose content is named by a 64-bit key
// (a source trace's hash block, an agent's system prompt, one turn's tool output). Cutting that sequence
// into blocks of `block_tokens` gives each block a content hash (the keys and offsets of the segment
// pieces it covers) and a chain id: chain(i) = mix(chain(i - 1), content(i)). A chain id therefore
// names the whole prefix up to its block, so equal ids still mean equal prefixes after re-blocking
// a 16-token trace into 256-token blocks, or a 512-token one into 128-token blocks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kvtier {

// A 64-bit mixing step (the SplitMix64 finaliser applied to a ^ rotated b): cheap, and it spreads
// nearby inputs (consecutive offsets, small trace ids) over the whole id space.
uint64_t mix_ids(uint64_t a, uint64_t b);

struct Segment {
  uint64_t key = 0;    // names the content; two segments with one key hold the same tokens
  int64_t tokens = 0;  // > 0
};

// Chains `segments` (covering tokens [0, total)) into blocks of `block_tokens`. Ids of blocks below
// `first_block` are taken from `ids` as they are (the caller knows they did not change); `ids` is
// resized to ceil(total / block_tokens).
// REQUIRES: block_tokens > 0, first_block <= ids.size(), and every segment has tokens > 0.
void chain_blocks(const std::vector<Segment>& segments, int64_t block_tokens, size_t first_block,
                  std::vector<uint64_t>& ids);

// Re-blocks a trace's ids (each naming `source_block_tokens` tokens, the last possibly partial) into
// `block_tokens`. Only the first `input_tokens` tokens are covered; ids beyond them are ignored.
// When the block sizes are equal the ids are kept as they are.
void reblock(const std::vector<uint64_t>& source_ids, int64_t source_block_tokens, int64_t input_tokens,
             int64_t block_tokens, std::vector<uint64_t>& out);

}  // namespace kvtier
