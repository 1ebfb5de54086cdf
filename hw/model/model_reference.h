// CPU references of the forward pass's kernels: slow, plain loops in double, for the GPU tests to compare
// against (and tested themselves, without a GPU, against hand arithmetic in model_reference_test.cpp).
// Tensors are row-major; bf16 values travel as uint16_t bits (kernels/quant_math.h converts them).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "hw/model/paged_kv.h"
#include "hw/model/transformer_shape.h"

namespace kvtier::hw {

// The host view of a step batch: per sequence its new tokens, cached context and page ids.
struct HostSequence {
  int new_tokens = 0;
  int context_tokens = 0;
  std::vector<int> pages;  // covers context + new_tokens positions
};

// y[r] = x[r] / sqrt(mean(x[r]^2) + eps) * weight, for rows of `width` elements.
std::vector<double> rmsnorm_reference(std::span<const uint16_t> x, std::span<const uint16_t> weight, int width,
                                      float eps);

// out = silu(gate) * up for rows laid out [gate (width) | up (width)].
std::vector<double> silu_mul_reference(std::span<const uint16_t> gate_up, int width);

// Rotary embedding (rotate-half pairing: element i with i + head_dim/2, frequency theta^(-2i/head_dim))
// of one head vector at `position`, in place.
void rope_reference(std::span<double> head, int64_t position, double theta);

// Rows of the step's QKV projection ([tokens][heads + 2 kv_heads][head_dim], bf16) split as the fused
// kernel does: rotated Q rounded to bf16 into `q` ([tokens][heads][head_dim]); rotated K and plain V
// rounded to bf16 into the pages of `pool` (laid out as `geometry`, layer `layer`, pages `page_stride`
// elements apart) at positions context_tokens.. of each sequence.
void rope_and_cache_reference(std::span<const uint16_t> qkv, std::span<const HostSequence> sequences,
                              const TransformerShape& shape, std::span<uint16_t> q, std::span<uint16_t> pool,
                              int64_t page_stride, const KvPageGeometry& geometry, int layer);

// Causal attention of each sequence's queries (q: [tokens][heads][head_dim] bf16) over the K/V of its
// positions 0 .. context + i in the pages: softmax(q k^T * scale) v per query head, K/V head
// = head / (heads / kv_heads). Result [tokens][heads][head_dim] in double.
std::vector<double> attention_reference(std::span<const uint16_t> q, std::span<const HostSequence> sequences,
                                        int heads, std::span<const uint16_t> pool, int64_t page_stride,
                                        const KvPageGeometry& geometry, int layer, double scale);

}  // namespace kvtier::hw
