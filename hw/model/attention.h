// Attention over the paged KV cache on the GPU: the new tokens of each sequence attend causally to their
// cached prefix and to themselves (prefill), or one token to its whole context (decode), in one kernel.
//
// CUDA: a flash-attention kernel (online softmax; the score matrix never leaves registers) on the tensor
// cores through mma.sync m16n8k16 bf16: a warp per 16 query rows, 64-key K/V tiles copied from the pages
// into shared memory with cp.async, three stages deep (one barrier per tile). attention_plan.h says how
// blocks map to work and when the keys are split across blocks (then a second kernel combines the parts).
// HIP: a portable kernel of the same contract, one block per (token, head), with no matrix instructions:
// correct, slow.
#pragma once

#include <cstdint>

#include "attention_plan.h"
#include "gpu/vendor.h"
#include "paged_kv.h"

namespace kvtier::hw {

// out[t][h][:] = softmax(q[t][h] . K^T * scale) V over the sequence's keys 0 .. context + i (t its i-th new
// token), K/V head h / (heads / kv.kv_heads). q and out: [batch.total_new_tokens][heads][kv.head_dim] bf16;
// head_dim 64 or 128. `splits` from attention_splits(); with splits > 1, `workspace` holds
// attention_workspace_floats() floats. `rows`: query rows of a block, 64 (4 warps, two blocks a
// multiprocessor) or 128 (8 warps, one); splits must come from attention_splits() with the same rows.
// Launch errors throw gpu::GpuError.
void paged_attention(const StepBatch& batch, const PagedKvLayer& kv, const uint16_t* q, uint16_t* out, int heads,
                     float scale, int splits, float* workspace, gpuStream_t stream, int rows = kAttentionRows);

}  // namespace kvtier::hw
