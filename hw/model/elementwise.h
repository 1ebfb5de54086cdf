// The forward pass's elementwise GPU kernels: bf16 in, bf16 out, float arithmetic in between, each one
// pass over its tensors with 16-byte accesses. CPU references are in model_reference.h.
//
//   rmsnorm          out[r] = x[row r] * rsqrt(mean(x^2) + eps) * weight  (rows optionally gathered, so the
//                    final norm reads only each sequence's last token for the LM head)
//   rope_and_cache   splits a QKV projection row: rotates Q into q_out and K into the paged cache, copies V
//                    into it (one kernel instead of a rotation and two scatters)
//   silu_mul         out = silu(gate) * up for rows [gate | up] of the fused gate/up projection
//   embed_tokens     gathers embedding rows
//   fill_random      hashes (seed, index) into uniform bf16 values: random weights without a host copy
#pragma once

#include <cstdint>

#include "hw/gpu/vendor.h"
#include "hw/model/paged_kv.h"
#include "hw/model/transformer_shape.h"

namespace kvtier::hw {

// width: a multiple of 8. rows_index: nullptr (row r reads x row r) or [rows] row numbers of x.
void rmsnorm(const uint16_t* x, const uint16_t* weight, uint16_t* out, int rows, int width, float eps,
             const int* rows_index, gpuStream_t stream);

// qkv: [batch.total_new_tokens][heads + 2 kv_heads][head_dim]; q_out: [tokens][heads][head_dim]. K/V land in
// layer `kv`'s pages at each token's position (context + index among the sequence's new tokens).
void rope_and_cache(const uint16_t* qkv, const StepBatch& batch, const TransformerShape& shape,
                    const PagedKvLayer& kv, uint16_t* q_out, gpuStream_t stream);

// gate_up: [rows][2 * width]; out: [rows][width]; width a multiple of 8.
void silu_mul(const uint16_t* gate_up, uint16_t* out, int64_t rows, int width, gpuStream_t stream);

void embed_tokens(const int* token_ids, const uint16_t* table, uint16_t* out, int tokens, int hidden,
                  gpuStream_t stream);

// data[i] = bf16(offset + scale * u(seed, i)), u uniform in [-1, 1).
void fill_random(uint16_t* data, int64_t count, uint64_t seed, float scale, float offset, gpuStream_t stream);

}  // namespace kvtier::hw
