// Device-side differences between CUDA and HIP that kernels need, for .cu files only.
//
// Warp-level exchange: CUDA's shuffles take a mask of participating lanes, HIP's take none and run on
// 64-lane wavefronts on AMD Instinct GPUs. Kernels here only exchange within aligned groups of at most
// 32 lanes with every lane of the group active, which means the same thing on both.
//
// Conversions and comparisons of bf16 and fp16 that CUDA has single instructions for: the kernels call
// these, which fall back to plain arithmetic with the same results where the hardware lacks them.
#pragma once

#include <cstdint>

#include "hw/gpu/vendor.h"

#if defined(KVTIER_GPU_HIP)
#include <hip/hip_fp16.h>
#endif

namespace kvtier::gpu {

// The value `v` of lane (this lane XOR lane_mask), within aligned groups of `width` lanes (width <= 32).
template <typename T>
__device__ inline T shfl_xor(T v, int lane_mask, int width) {
#if defined(KVTIER_GPU_CUDA)
  return __shfl_xor_sync(0xffffffffu, v, lane_mask, width);
#else
  return __shfl_xor(v, lane_mask, width);
#endif
}

// The value `v` of lane (this lane - delta) within aligned groups of `width` lanes (width <= 32); lanes
// below delta get their own.
template <typename T>
__device__ inline T shfl_up(T v, unsigned delta, int width) {
#if defined(KVTIER_GPU_CUDA)
  return __shfl_up_sync(0xffffffffu, v, delta, width);
#else
  return __shfl_up(v, delta, width);
#endif
}

// Lane-wise minimum (kMax false) or maximum of two pairs of bf16 (a NaN loses to a number), as fminf and
// fmaxf of their values give them: one instruction on CUDA (sm_80 and later), through floats elsewhere.
template <bool kMax>
__device__ inline uint32_t bf16x2_bound(uint32_t a, uint32_t b) {
#if defined(KVTIER_GPU_CUDA) && __CUDA_ARCH__ >= 800
  uint32_t d;
  if constexpr (kMax) {
    asm("max.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  } else {
    asm("min.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  }
  return d;
#else
  const auto bound = [](float x, float y) { return kMax ? fmaxf(x, y) : fminf(x, y); };
  const float low = bound(__uint_as_float(a << 16), __uint_as_float(b << 16));
  const float high = bound(__uint_as_float(a & 0xffff0000u), __uint_as_float(b & 0xffff0000u));
  return (__float_as_uint(low) >> 16) | (__float_as_uint(high) & 0xffff0000u);
#endif
}

// Two floats as a word of bf16, `lo` in the low half, each rounded to nearest even; the same bits as
// rounding each by hand for every input that is not NaN (the hardware returns its canonical NaN). CUDA
// has one instruction for the pair on sm_80 and later; elsewhere it is the integer rounding.
__device__ inline uint32_t pack_bf16x2_rn(float lo, float hi) {
#if defined(KVTIER_GPU_CUDA) && __CUDA_ARCH__ >= 800
  uint32_t packed;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(packed) : "f"(hi), "f"(lo));
  return packed;
#else
  const uint32_t a = __float_as_uint(lo), b = __float_as_uint(hi);
  return __byte_perm(a + 0x7fffu + ((a >> 16) & 1u), b + 0x7fffu + ((b >> 16) & 1u), 0x7632);
#endif
}

// The fp16 bits of `f` rounded to nearest even by the hardware conversion (infinite from 65520 up).
__device__ inline uint16_t fp16_bits_rn(float f) {
  uint16_t bits;
#if defined(KVTIER_GPU_CUDA)
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(bits) : "f"(f));
#else
  bits = __half_as_ushort(__float2half_rn(f));
#endif
  return bits;
}

// The value of fp16 bits `h` that are not NaN, by the hardware conversion (exact).
__device__ inline float fp16_bits_value(uint16_t h) {
  float f;
#if defined(KVTIER_GPU_CUDA)
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
#else
  f = __half2float(__ushort_as_half(h));
#endif
  return f;
}

}  // namespace kvtier::gpu
