#include "hw/kernels/turboquant.h"

#include <cmath>
#include <cstring>
#include <numbers>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/core/kv_layout.h"
#include "hw/kernels/quant_math.h"

namespace kvtier::hw {
namespace {

double normal_pdf(double x) {
  return std::exp(-0.5 * x * x) / std::sqrt(2.0 * std::numbers::pi);
}
double normal_cdf(double x) {
  return 0.5 * std::erfc(-x / std::numbers::sqrt2);
}

TurboQuantCodebook lloyd_max_gaussian() {
  std::vector<double> c(16);
  for (int i = 0; i < 16; ++i) c[i] = -3.0 + 6.0 * (i + 0.5) / 16;
  std::vector<double> b(15);
  for (int iteration = 0; iteration < 2000; ++iteration) {
    for (int i = 0; i < 15; ++i) b[i] = 0.5 * (c[i] + c[i + 1]);
    for (int i = 0; i < 16; ++i) {
      double lo = i == 0 ? -INFINITY : b[i - 1];
      double hi = i == 15 ? INFINITY : b[i];
      // The centroid of a cell is the conditional mean of N(0, 1) over it.
      c[i] = (normal_pdf(lo) - normal_pdf(hi)) / (normal_cdf(hi) - normal_cdf(lo));
    }
  }
  TurboQuantCodebook book{};
  for (int i = 0; i < 16; ++i) book.centroids[i] = static_cast<float>(c[i]);
  for (int i = 0; i < 15; ++i) book.boundaries[i] = static_cast<float>(0.5 * (c[i] + c[i + 1]));
  return book;
}

void check_size(size_t actual, size_t expected, const char* what) {
  if (actual != expected) {
    throw std::invalid_argument(std::string("turboquant: ") + what + " holds " + std::to_string(actual) +
                                ", expected " + std::to_string(expected));
  }
}

// In-place unnormalised Walsh-Hadamard transform, stages h = 1, 2, 4, ..., d/2.
void walsh_hadamard(float* x, int d) {
  for (int h = 1; h < d; h <<= 1) {
    for (int i = 0; i < d; i += 2 * h) {
      for (int j = i; j < i + h; ++j) {
        float a = x[j];
        float b = x[j + h];
        x[j] = a + b;
        x[j + h] = a - b;
      }
    }
  }
}

// Sum of squares in the format's order (see the header).
float ordered_sum_of_squares(const float* x, int d) {
  constexpr int kMaxRuns = 512 / kTurboQuantNormRun;
  const int runs = d / kTurboQuantNormRun;
  float sums[kMaxRuns] = {};
  for (int r = 0; r < runs; ++r) {
    float sum = 0.0f;
    for (int e = r * kTurboQuantNormRun; e < (r + 1) * kTurboQuantNormRun; ++e)
      sum = fused_multiply_add(x[e], x[e], sum);
    sums[r] = sum;
  }
  for (int distance = runs / 2; distance > 0; distance >>= 1) {
    float next[kMaxRuns];
    for (int r = 0; r < runs; ++r) next[r] = sums[r] + sums[r ^ distance];
    std::memcpy(sums, next, sizeof(float) * runs);
  }
  return sums[0];
}

void put_fp16(uint8_t* at, uint16_t h) {
  at[0] = static_cast<uint8_t>(h & 0xff);
  at[1] = static_cast<uint8_t>(h >> 8);
}

uint16_t get_fp16(const uint8_t* at) {
  return static_cast<uint16_t>(at[0] | (at[1] << 8));
}

void pack_nibbles(const uint32_t* nibbles, int d, uint8_t* out) {
  for (int i = 0; i < d; i += 2) out[i / 2] = static_cast<uint8_t>(nibbles[i] | (nibbles[i + 1] << 4));
}

}  // namespace

const TurboQuantCodebook& gaussian_codebook() {
  static const TurboQuantCodebook book = lloyd_max_gaussian();
  return book;
}

TurboQuantParams turboquant_params(int head_dim, int slot_align, uint32_t rotation_seed) {
  if (head_dim < 32 || head_dim > 512 || (head_dim & (head_dim - 1)) != 0) {
    throw std::invalid_argument(
        "turboquant: head_dim must be a power of two from 32 to 512 (the rotation "
        "is a Walsh-Hadamard transform), got " +
        std::to_string(head_dim));
  }
  TurboQuantParams params;
  params.head_dim = head_dim;
  params.slot_bytes = static_cast<int>(turboquant_slot_bytes(head_dim, slot_align));
  params.rotation_seed = rotation_seed;
  params.codebook = gaussian_codebook();
  return params;
}

namespace {

// The number of (K, V) vectors the spans hold. REQUIRES: their sizes agree; throws otherwise.
size_t checked_vectors(const TurboQuantParams& params, size_t k_size, size_t v_size, size_t slot_bytes) {
  const size_t d = static_cast<size_t>(params.head_dim);
  const size_t vectors = k_size / d;
  check_size(k_size, vectors * d, "k");
  check_size(v_size, vectors * d, "v");
  check_size(slot_bytes, vectors * params.slot_bytes, "slots");
  return vectors;
}

}  // namespace

TurboQuantSlotOffsets turboquant_slot_offsets(int head_dim) {
  int packed = head_dim / 2;
  return {0, packed, packed + 2, 2 * packed + 2, 2 * packed + 4, 2 * packed + 6};
}

void turboquant_quantize_reference(const TurboQuantParams& params, std::span<const uint16_t> k,
                                   std::span<const uint16_t> v, std::span<uint8_t> slots) {
  const int d = params.head_dim;
  const size_t vectors = checked_vectors(params, k.size(), v.size(), slots.size());
  const TurboQuantSlotOffsets at = turboquant_slot_offsets(d);
  std::vector<float> x(d);
  std::vector<uint32_t> nibbles(d);
  for (size_t n = 0; n < vectors; ++n) {
    uint8_t* slot = slots.data() + n * params.slot_bytes;
    std::memset(slot, 0, params.slot_bytes);

    for (int i = 0; i < d; ++i) x[i] = bf16_to_float(k[n * d + i]);
    float norm = std::sqrt(ordered_sum_of_squares(x.data(), d));
    for (int i = 0; i < d; ++i) x[i] *= rotation_sign(params.rotation_seed, i);
    walsh_hadamard(x.data(), d);
    float inverse_norm = norm > 0.0f ? 1.0f / norm : 0.0f;
    for (int i = 0; i < d; ++i) nibbles[i] = codebook_index(params.codebook.boundaries, x[i] * inverse_norm);
    pack_nibbles(nibbles.data(), d, slot + at.k_indices);
    put_fp16(slot + at.k_norm, float_to_fp16(norm));

    float lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < d; ++i) {
      x[i] = bf16_to_float(v[n * d + i]);
      widen_bounds(x[i], lo, hi);
    }
    lo = canonical_zero(lo);
    hi = canonical_zero(hi);
    uint16_t zero_h = float_to_fp16(lo);
    uint16_t scale_h = float_to_fp16((hi - lo) / 15.0f);
    float zero = fp16_to_float(zero_h), inverse = inverse_scale(fp16_to_float(scale_h));
    for (int i = 0; i < d; ++i) nibbles[i] = affine_nibble(x[i], zero, inverse);
    pack_nibbles(nibbles.data(), d, slot + at.v_data);
    put_fp16(slot + at.v_scale, scale_h);
    put_fp16(slot + at.v_zero, zero_h);
  }
}

void turboquant_dequantize_reference(const TurboQuantParams& params, std::span<const uint8_t> slots,
                                     std::span<uint16_t> k, std::span<uint16_t> v) {
  const int d = params.head_dim;
  const size_t vectors = checked_vectors(params, k.size(), v.size(), slots.size());
  const TurboQuantSlotOffsets at = turboquant_slot_offsets(d);
  const float inverse_d = 1.0f / static_cast<float>(d);
  std::vector<float> x(d);
  for (size_t n = 0; n < vectors; ++n) {
    const uint8_t* slot = slots.data() + n * params.slot_bytes;
    for (int i = 0; i < d; ++i) {
      uint32_t nibble = (slot[at.k_indices + i / 2] >> (4 * (i & 1))) & 0xfu;
      x[i] = params.codebook.centroids[nibble];
    }
    walsh_hadamard(x.data(), d);
    float scale = fp16_to_float(get_fp16(slot + at.k_norm)) * inverse_d;
    for (int i = 0; i < d; ++i) {
      // s * x * scale, with s applied to the bits: for a NaN as well as for numbers.
      const uint16_t sign = rotation_sign(params.rotation_seed, i) < 0.0f ? 0x8000u : 0u;
      k[n * d + i] = float_to_bf16(x[i] * scale) ^ sign;
    }

    float zero = fp16_to_float(get_fp16(slot + at.v_zero));
    float v_scale = fp16_to_float(get_fp16(slot + at.v_scale));
    for (int i = 0; i < d; ++i) {
      uint32_t nibble = (slot[at.v_data + i / 2] >> (4 * (i & 1))) & 0xfu;
      v[n * d + i] = float_to_bf16(affine_value(nibble, zero, v_scale));
    }
  }
}

}  // namespace kvtier::hw
