// TurboQuant 4-bit: the packed per-token, per-KV-head slot that vLLM's turboquant_4bit_nc preset stores.
//
// Slot layout (vLLM's, docs/cost-model.md), d = head_dim, all fields little-endian, padded with zero bytes to
// slot_bytes:
//   [K indices: d/2 bytes | K norm: fp16 | V data: d/2 bytes | V scale: fp16 | V zero: fp16 | padding]
// Two 4-bit values per byte, the even element in the low nibble.
//
// K: n = ||k||; w = H (s * k), the unnormalised Walsh-Hadamard transform of k with random signs s; the
// coordinates z = w / n of the rotated unit vector are about N(0, 1) (N(0, 1/d) before the sqrt(d) the
// unnormalised transform adds), so each is stored as the index of its Lloyd-Max cell for N(0, 1).
// Decoding inverts the rotation: k' = s * H(c[index]) * n / d (H H = d I).
// V: per-token min/max: scale = (max - min) / 15, zero = min, value = round((v - zero) / scale).
//
// The order of floating-point operations is part of the format, so that the GPU kernels reproduce the
// reference bit for bit: the squared norm is summed as d/16 runs of 16 consecutive elements, each
// adding its squares in order with fused multiply-adds, then combined by a butterfly over run distances
// d/32, ..., 2, 1. V's nibble is round((v - zero) / scale) as
// trunc(fma(v, 1 / scale, fma(-zero, 1 / scale, 0.5))), its value fma(nibble, scale, zero).
#pragma once

#include <cstdint>
#include <span>

namespace kvtier::hw {

inline constexpr int kTurboQuantNormRun = 16;  // elements per partial sum of the squared norm

// The 16-level Lloyd-Max quantizer of N(0, 1): ascending centroids and the 15 boundaries between them.
struct TurboQuantCodebook {
  float centroids[16];
  float boundaries[15];
};

// Computed once by Lloyd's iteration on the Gaussian density (double precision, then rounded to float).
const TurboQuantCodebook& gaussian_codebook();

// What a kernel launch needs; passed to the GPU by value.
struct TurboQuantParams {
  int head_dim = 128;    // a power of two, 32 to 512
  int slot_bytes = 136;  // turboquant_slot_bytes(head_dim, slot_align)
  uint32_t rotation_seed = 0x5eed;
  TurboQuantCodebook codebook;  // gaussian_codebook()
};

// Params for `head_dim` with kvtier_core's slot size; throws std::invalid_argument if head_dim is not a
// power of two in [32, 512].
TurboQuantParams turboquant_params(int head_dim, int slot_align = 8, uint32_t rotation_seed = 0x5eed);

// Byte offsets of the slot's fields.
struct TurboQuantSlotOffsets {
  int k_indices, k_norm, v_data, v_scale, v_zero, end;
};
TurboQuantSlotOffsets turboquant_slot_offsets(int head_dim);

// References. k, v: [vectors, head_dim] bf16 bit patterns; slots: [vectors, slot_bytes].
// REQUIRES: the spans hold exactly that many elements (checked; std::invalid_argument otherwise).
void turboquant_quantize_reference(const TurboQuantParams& params, std::span<const uint16_t> k,
                                   std::span<const uint16_t> v, std::span<uint8_t> slots);
void turboquant_dequantize_reference(const TurboQuantParams& params, std::span<const uint8_t> slots,
                                     std::span<uint16_t> k, std::span<uint16_t> v);

}  // namespace kvtier::hw
