// What one launch of a paged attention kernel needs, and which part of it a block owns: shared by the
// portable mma.sync kernel (attention.cu) and the Hopper kernel (attention_hopper.cu). Included by .cu
// files only.
#pragma once

#include "hw/model/attention_plan.h"
#include "hw/model/paged_kv.h"

namespace kvtier::hw {

// Work of one launch: grid x = KV head, y = query tile (the last first: under the causal mask it has the
// most keys, so the longest blocks start first), z = sequence * splits + split.
struct AttentionParams {
  StepBatch batch;
  PagedKvLayer kv;
  const uint16_t* q;
  uint16_t* out;
  float* partial_out;  // [splits][tokens][heads][head_dim]
  float* partial_lse;  // [splits][tokens][heads]
  int heads;
  int ratio;
  int tokens_per_tile;
  int query_tiles;
  int splits;
  float scale;
};

// The block's sequence, query tile and key range [key_begin, key_stop).
struct BlockWork {
  int seq, q0, tok0, tile_tokens, context, key_begin, key_stop;
};

#if defined(__CUDACC__) || defined(__HIPCC__)
__device__ inline bool block_work(const AttentionParams& p, int tile, BlockWork& w) {
  w.seq = static_cast<int>(blockIdx.z) / p.splits;
  const int split = static_cast<int>(blockIdx.z) % p.splits;
  w.q0 = p.batch.query_start[w.seq];
  const int new_tokens = p.batch.query_start[w.seq + 1] - w.q0;
  w.tok0 = tile * p.tokens_per_tile;
  if (w.tok0 >= new_tokens) return false;
  w.tile_tokens = min(p.tokens_per_tile, new_tokens - w.tok0);
  w.context = p.batch.context_tokens[w.seq];
  const int total = w.context + new_tokens;
  w.key_begin = attention_split_begin(total, p.splits, split);
  w.key_stop = min(min(total, w.context + w.tok0 + w.tile_tokens), attention_split_begin(total, p.splits, split + 1));
  return true;
}
#endif

}  // namespace kvtier::hw
