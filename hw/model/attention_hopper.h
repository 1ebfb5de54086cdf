// The Hopper (sm_90a) prefill kernel of paged_attention: warpgroup MMA (wgmma) from 128-byte-swizzled
// shared memory, a producer warpgroup streaming K/V tiles from the pages behind mbarriers, and two
// consumer warpgroups taking turns on the tensor cores so that one's softmax overlaps the other's GEMMs.
// attention.cu dispatches to it where it applies and keeps the mma.sync kernel for everything else.
// The producer brings K/V tiles in with the tensor-copy engine (TMA: one cp.async.bulk.tensor per box of
// rows of one page and head) where the pool allows it, and with 16-byte cp.async copies otherwise.
#pragma once

#include <algorithm>
#include <cstdint>

#include "hw/model/attention_params.h"
#include "hw/gpu/vendor.h"

namespace kvtier::hw {

inline constexpr int kHopperAttentionHeadDim = 128;
inline constexpr int kHopperAttentionRows = 128;  // query rows of a block: two consumer warpgroups of 64
inline constexpr int kHopperAttentionKeys = 128;  // keys of a K/V tile
inline constexpr int kHopperAttentionMinBlockTokens = 4;  // a 128-key tile spans at most 32 pages

// Rows of one tensor-copy box of the kernel's K/V loads from the pool `kv`: the largest power of two that
// divides block_tokens, at most 128 (a box never crosses a page, and fills whole 8-row swizzle atoms of
// 1024 bytes), or 0 where the tensor-copy engine cannot address the pool and the kernel copies with cp.async:
// block_tokens not a multiple of 8, head_dim not 128, or a pool address, page stride or offset that is not
// a multiple of 16 bytes (or past the 2^40-byte strides a tensor map holds).
inline int hopper_tma_box_rows(const PagedKvLayer& kv) {
  constexpr int64_t kMaxStride = int64_t{1} << 39;  // elements: 2^40 bytes
  const bool aligned = reinterpret_cast<uintptr_t>(kv.pool) % 16 == 0 && kv.page_stride % 8 == 0 &&
                       kv.k_offset % 8 == 0 && kv.v_offset % 8 == 0 && kv.head_stride % 8 == 0;
  const bool addressable = kv.page_stride < kMaxStride && kv.v_offset < kMaxStride && kv.head_stride < kMaxStride;
  if (!aligned || !addressable || kv.head_dim != kHopperAttentionHeadDim || kv.block_tokens % 8 != 0) return 0;
  return std::min(kv.block_tokens & -kv.block_tokens, 128);
}

// Whether the current device runs the kernel (compute capability 9.0: sm_90a code runs nowhere else).
bool hopper_attention_device();

// Blocks of the kernel resident on one multiprocessor of the current device.
int hopper_attention_blocks_per_multiprocessor();

// Launches the kernel for `params` (head_dim 128, splits 1, tokens_per_tile from kHopperAttentionRows).
void launch_hopper_attention(const AttentionParams& params, gpuStream_t stream);

}  // namespace kvtier::hw
