// Scalar arithmetic shared by the CPU references and the GPU kernels of the 4-bit encodings.
//
// Every function here is compiled for the host (plain C++) and, under nvcc or hipcc, for the device
// too, so the references and the kernels round the same values the same way; with floating-point
// contraction off on both (hw/CMakeLists.txt), their outputs are bit-identical. The bf16 and fp16
// conversions are written out because they must exist on the host without a GPU toolchain and agree
// bit for bit with the device (round to nearest even; fp16 saturates at +-65504, as a stored scale
// must not become infinite). A NaN converts to one canonical quiet NaN, whatever its sign and payload:
// those differ between an x86 CPU and a GPU (inf - inf is negative on x86, and a GPU returns its own
// NaN from arithmetic on NaNs), so keeping them would make the encodings platform-dependent.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

#if defined(__HIPCC__)
#include <hip/hip_runtime.h>  // __float_as_uint and the other device intrinsics, whatever came first
#endif

#if defined(__CUDACC__) || defined(__HIPCC__)
#define KVTIER_HD __host__ __device__ inline
#else
#define KVTIER_HD inline
#endif

namespace kvtier::hw {

KVTIER_HD uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return __float_as_uint(f);
#else
  return std::bit_cast<uint32_t>(f);
#endif
}

KVTIER_HD float bits_float(uint32_t u) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return __uint_as_float(u);
#else
  return std::bit_cast<float>(u);
#endif
}

// a * b + c rounded once. The encodings use it wherever a product is added, as a GPU does that in one
// instruction; the host's std::fma rounds the same way (in software where the CPU lacks FMA).
KVTIER_HD float fused_multiply_add(float a, float b, float c) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

KVTIER_HD float bf16_to_float(uint16_t h) {
  return bits_float(static_cast<uint32_t>(h) << 16);
}

KVTIER_HD uint16_t float_to_bf16(float f) {
  uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0u;  // the canonical NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

KVTIER_HD float fp16_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0) {
    float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;  // subnormal: m * 2^-24
    return sign != 0 ? -magnitude : magnitude;
  }
  if (exponent == 31) return bits_float(sign | 0x7f800000u | (mantissa << 13));
  return bits_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

KVTIER_HD uint16_t float_to_fp16(float f) {
  uint32_t u = float_bits(f);
  uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  uint32_t magnitude = u & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return 0x7e00u;          // the canonical NaN
  if (magnitude >= 0x477fe000u) return sign | 0x7bffu;  // >= 65504: saturate
  if (magnitude >= 0x38800000u) {                       // normal in fp16
    uint32_t rebiased = magnitude - 0x38000000u;        // exponent 127 -> 15 bias
    rebiased += 0xfffu + ((rebiased >> 13) & 1u);
    return sign | static_cast<uint16_t>(rebiased >> 13);
  }
  uint32_t shift = 126u - (magnitude >> 23);  // subnormal: value / 2^-24
  if (shift > 24u) return sign;
  uint32_t significand = (magnitude & 0x7fffffu) | 0x800000u;
  uint32_t result = significand >> shift;
  uint32_t remainder = significand & ((1u << shift) - 1u);
  uint32_t half = 1u << (shift - 1u);
  if (remainder > half || (remainder == half && (result & 1u) != 0)) ++result;
  return sign | static_cast<uint16_t>(result);
}

// +1 or -1: the random sign of coordinate `i` in TurboQuant's rotation (a 32-bit integer hash of the
// seed and the index; the same on host and device).
KVTIER_HD float rotation_sign(uint32_t seed, uint32_t i) {
  uint32_t h = i * 0x9e3779b1u ^ seed;
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return (h & 1u) != 0 ? -1.0f : 1.0f;
}

// Index of the codebook cell holding z: the number of the 15 ascending `boundaries` strictly below z
// (a 4-step binary search).
KVTIER_HD uint32_t codebook_index(const float* boundaries, float z) {
  uint32_t index = 0;
  for (uint32_t step = 8; step > 0; step >>= 1) {
    if (z > boundaries[index + step - 1]) index += step;
  }
  return index;
}

// The reciprocal affine_nibble multiplies by: 1 / scale, or 0 for a constant group (scale 0). One
// division per group instead of one per element (a division is a dozen instructions on a GPU).
KVTIER_HD float inverse_scale(float scale) {
  return scale > 0.0f ? 1.0f / scale : 0.0f;
}

// (x - zero) * inverse + 0.5, whose truncation is x's nibble, as the format rounds it:
// fma(x, inverse, fma(-zero, inverse, 0.5)). The inner term is the same for a whole group, so a kernel
// spends one instruction per element on it.
KVTIER_HD float affine_position(float x, float zero, float inverse) {
  return fused_multiply_add(x, inverse, fused_multiply_add(-zero, inverse, 0.5f));
}

// Min/max quantization to 4 bits with the stored (fp16-rounded) zero and scale:
// round((x - zero) * inverse_scale(scale)) clamped to [0, 15].
KVTIER_HD uint32_t affine_nibble(float x, float zero, float inverse) {
  float q = affine_position(x, zero, inverse);
  if (!(q >= 1.0f)) return 0;  // also maps NaN to 0
  if (q >= 15.0f) return 15;   // before the conversion, which is undefined past 2^32
  return static_cast<uint32_t>(q);
}

// Widens [lo, hi] to hold x; NaN is skipped, signalling NaN included (which std::fmin, following IEEE
// minNum, turns into a NaN result). The GPU kernels' fminf/fmaxf give the same bounds up to the sign of
// a zero bound, which canonical_zero removes.
KVTIER_HD void widen_bounds(float x, float& lo, float& hi) {
  if (x < lo) lo = x;
  if (x > hi) hi = x;
}

// The bounds min/max quantization stores, with a zero of either sign made +0: which zero a minimum of
// +0 and -0 returns differs between std::fmin on x86 and a GPU's fminf. Addition keeps every other
// value as it is.
KVTIER_HD float canonical_zero(float bound) {
  return bound + 0.0f;
}

KVTIER_HD float affine_value(uint32_t nibble, float zero, float scale) {
  return fused_multiply_add(static_cast<float>(nibble), scale, zero);
}

}  // namespace kvtier::hw
