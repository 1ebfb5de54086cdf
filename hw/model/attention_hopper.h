// The Hopper (sm_90a) prefill kernel of paged_attention: warpgroup MMA (wgmma) from 128-byte-swizzled
// shared memory, a producer warpgroup streaming K/V tiles from the pages behind mbarriers, and two
// consumer warpgroups taking turns on the tensor cores so that one's softmax overlaps the other's GEMMs.
// attention.cu dispatches to it where it applies and keeps the mma.sync kernel for everything else.
#pragma once

#include "attention_params.h"
#include "gpu/vendor.h"

namespace kvtier::hw {

inline constexpr int kHopperAttentionHeadDim = 128;
inline constexpr int kHopperAttentionRows = 128;  // query rows of a block: two consumer warpgroups of 64
inline constexpr int kHopperAttentionMinBlockTokens = 4;  // a 128-key tile spans at most 32 pages

// Whether the current device runs the kernel (compute capability 9.0: sm_90a code runs nowhere else).
bool hopper_attention_device();

// Launches the kernel for `params` (head_dim 128, splits 1, tokens_per_tile from kHopperAttentionRows).
void launch_hopper_attention(const AttentionParams& params, gpuStream_t stream);

}  // namespace kvtier::hw
