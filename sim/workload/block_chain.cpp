#include "sim/workload/block_chain.h"

#include <algorithm>
#include <bit>

namespace kvtier {
namespace {

// Chain ids start from this constant so that a one-block chain is not the bare content hash.
constexpr uint64_t kChainRoot = 0x6b76746965722d31ULL;  // "kvtier-1"

}  // namespace

uint64_t mix_ids(uint64_t a, uint64_t b) {
  uint64_t x = a ^ (std::rotl(b, 23) + 0x9e3779b97f4a7c15ULL);
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

void chain_blocks(const std::vector<Segment>& segments, int64_t block_tokens, size_t first_block,
                  std::vector<uint64_t>& ids) {
  int64_t total = 0;
  for (const Segment& s : segments) total += s.tokens;
  size_t blocks = static_cast<size_t>((total + block_tokens - 1) / block_tokens);
  ids.resize(blocks);
  if (first_block >= blocks) return;

  // Walk back from the end to the segment holding the first token of `first_block` (usually near the
  // end: a session's next turn recomputes the blocks past what it kept).
  int64_t position = static_cast<int64_t>(first_block) * block_tokens;
  size_t segment = segments.size() - 1;
  int64_t segment_start = total - segments[segment].tokens;
  while (segment_start > position) segment_start -= segments[--segment].tokens;

  uint64_t chain = first_block == 0 ? kChainRoot : ids[first_block - 1];
  // A block's content hash starts with mix_ids(0, key) of the segment it starts in: the same for every
  // block that starts in one segment, so it is computed once per segment.
  uint64_t segment_start_hash = mix_ids(0, segments[segment].key);
  for (size_t block = first_block; block < blocks; ++block) {
    int64_t block_end = std::min(position + block_tokens, total);
    uint64_t content = segment_start_hash;
    bool first_piece = true;
    while (position < block_end) {
      int64_t piece_end = std::min(block_end, segment_start + segments[segment].tokens);
      if (!first_piece) content = mix_ids(content, segments[segment].key);
      first_piece = false;
      content = mix_ids(content, static_cast<uint64_t>(position - segment_start));
      content = mix_ids(content, static_cast<uint64_t>(piece_end - segment_start));
      position = piece_end;
      if (position == segment_start + segments[segment].tokens && segment + 1 < segments.size()) {
        segment_start += segments[segment++].tokens;
        segment_start_hash = mix_ids(0, segments[segment].key);
      }
    }
    chain = mix_ids(chain, content);
    ids[block] = chain;
  }
}

void reblock(const std::vector<uint64_t>& source_ids, int64_t source_block_tokens, int64_t input_tokens,
             int64_t block_tokens, std::vector<uint64_t>& out) {
  if (block_tokens == source_block_tokens) {
    out = source_ids;
    return;
  }
  std::vector<Segment> segments;
  segments.reserve(source_ids.size());
  int64_t covered = 0;
  for (uint64_t id : source_ids) {
    int64_t tokens = std::min(source_block_tokens, input_tokens - covered);
    if (tokens <= 0) break;
    segments.push_back({id, tokens});
    covered += tokens;
  }
  chain_blocks(segments, block_tokens, 0, out);
}

}  // namespace kvtier
