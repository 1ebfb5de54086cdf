// Device-side differences between CUDA and HIP that kernels need, for .cu files only.
//
// Warp-level exchange: CUDA's shuffles take a mask of participating lanes, HIP's take none and run on
// 64-lane wavefronts on AMD Instinct GPUs. Kernels here only exchange within aligned groups of at most
// 32 lanes with every lane of the group active, which means the same thing on both.
#pragma once

#include "gpu/vendor.h"

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

}  // namespace kvtier::gpu
