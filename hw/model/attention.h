// Attention over the paged KV cache on the GPU: the new tokens of each sequence attend causally to their
// cached prefix and to themselves (prefill), or one token to its whole context (decode), in one kernel.
//
// CUDA on Hopper (compute capability 9.0), head_dim 128, unsplit: a FlashAttention-3-style kernel
// (attention_hopper.h: wgmma, warp-specialised producer and consumers, consumers taking turns).
// CUDA otherwise: a flash-attention kernel (online softmax; the score matrix never leaves registers) on the
// tensor cores through mma.sync m16n8k16 bf16: a warp per 16 query rows, 64-key K/V tiles copied from the pages
// into shared memory with cp.async, three stages deep (one barrier per tile). attention_plan.h says how
// blocks map to work and when the keys are split across blocks (then a second kernel combines the parts).
// HIP: a portable kernel of the same contract, one block per (token, head), with no matrix instructions:
// correct, slow.
#pragma once

#include <cstdint>
#include <optional>

#include "hw/model/attention_plan.h"
#include "hw/gpu/vendor.h"
#include "hw/model/paged_kv.h"
#include "sim/core/attention_cost.h"

namespace kvtier::hw {

// out[t][h][:] = softmax(q[t][h] . K^T * scale) V over the sequence's keys 0 .. context + i (t its i-th new
// token), K/V head h / (heads / kv.kv_heads). q and out: [batch.total_new_tokens][heads][kv.head_dim] bf16;
// head_dim 64 or 128. `splits` from attention_splits(); with splits > 1, `workspace` holds
// attention_workspace_floats() floats. `rows`: query rows of a block, 64 (4 warps, two blocks a
// multiprocessor) or 128 (8 warps, one); splits must come from attention_splits() with the same rows.
// `kernel`: kAuto runs the Hopper kernel where attention_uses_wgmma() says so; kMmaSync always the mma.sync
// one. Launch errors throw gpu::GpuError.
enum class AttentionKernel { kAuto, kMmaSync };
void paged_attention(const StepBatch& batch, const PagedKvLayer& kv, const uint16_t* q, uint16_t* out, int heads,
                     float scale, int splits, float* workspace, gpuStream_t stream, int rows = kAttentionRows,
                     AttentionKernel kernel = AttentionKernel::kAuto);

// Whether paged_attention with kAuto runs the Hopper kernel on the current device: a CUDA build with it,
// compute capability 9.0 (the first device asked), head_dim 128, block_tokens >= 4, splits 1, rows 128 and
// heads / kv_heads <= 128.
bool attention_uses_wgmma(int head_dim, int heads, int kv_heads, int block_tokens, int splits, int rows);

// How paged_attention cuts a launch on the current device, as the cost model describes it
// (sim/core/attention_cost.h): query rows, the split rule's bounds, and each kernel's key tile and resident
// blocks (the multiprocessors times what the occupancy calculator allows); the costs are left 0 for the
// calibration to fit. nullopt on HIP, whose portable kernel (one block per token and head) the model does
// not describe.
std::optional<AttentionCosts> paged_attention_tiling(int head_dim, int heads, int kv_heads, int block_tokens,
                                                     int rows = kAttentionRows);

}  // namespace kvtier::hw
