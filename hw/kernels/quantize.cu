// 4-bit quantize/dequantize kernels: TurboQuant slots and group-scaled int4.
//
// TurboQuant grid mapping: a team of 32 lanes per vector (one token of one KV head), each lane holding
// E = head_dim / 32 consecutive elements; 8 teams per 256-thread block, teams stride over the vectors.
// The Walsh-Hadamard stages shorter than E run in registers, the longer ones exchange with lane
// (l XOR h/E) through shuffles; the norm and min/max reductions are butterflies over the 32 lanes, in the
// order turboquant.h fixes. int4 mapping: g/8 lanes per group, 8 elements (one 16-byte load) per lane.
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "gpu/check.h"
#include "gpu/device.h"
#include "kernels_gpu.h"
#include "quant_math.h"

namespace kvtier::hw {
namespace {

constexpr int kThreads = 256;
constexpr int kLanes = kTurboQuantLanes;
constexpr int kTeamsPerBlock = kThreads / kLanes;

// Loads N bf16 values as floats with the widest aligned access N allows.
template <int N>
__device__ void load_bf16(const uint16_t* src, float* out) {
  if constexpr (N % 8 == 0) {
#pragma unroll
    for (int w = 0; w < N / 8; ++w) {
      uint4 word = reinterpret_cast<const uint4*>(src)[w];
      unsigned int parts[4] = {word.x, word.y, word.z, word.w};
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        out[w * 8 + 2 * j] = bf16_to_float(static_cast<uint16_t>(parts[j] & 0xffffu));
        out[w * 8 + 2 * j + 1] = bf16_to_float(static_cast<uint16_t>(parts[j] >> 16));
      }
    }
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) out[i] = bf16_to_float(src[i]);
  }
}

template <int N>
__device__ void store_bf16(const float* in, uint16_t* dst) {
  if constexpr (N % 8 == 0) {
#pragma unroll
    for (int w = 0; w < N / 8; ++w) {
      unsigned int parts[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        parts[j] = float_to_bf16(in[w * 8 + 2 * j]) |
                   (static_cast<unsigned int>(float_to_bf16(in[w * 8 + 2 * j + 1])) << 16);
      }
      reinterpret_cast<uint4*>(dst)[w] = make_uint4(parts[0], parts[1], parts[2], parts[3]);
    }
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) dst[i] = float_to_bf16(in[i]);
  }
}

// The unnormalised Walsh-Hadamard transform of the team's vector, E elements per lane.
template <int E>
__device__ void walsh_hadamard(float* x, int lane, int head_dim) {
#pragma unroll
  for (int h = 1; h < E; h <<= 1) {
#pragma unroll
    for (int i = 0; i < E; ++i) {
      if ((i & h) == 0) {
        float a = x[i], b = x[i + h];
        x[i] = a + b;
        x[i + h] = a - b;
      }
    }
  }
  for (int h = E; h < head_dim; h <<= 1) {
    const int mask = h / E;
    const bool lower = (lane & mask) == 0;
#pragma unroll
    for (int i = 0; i < E; ++i) {
      float partner = gpu::shfl_xor(x[i], mask, kLanes);
      x[i] = lower ? x[i] + partner : partner - x[i];
    }
  }
}

// Packs E nibbles (E >= 2) into E/2 bytes at `out`; with E == 1 even lanes write their pair's byte.
template <int E>
__device__ void store_nibbles(const uint32_t* nibble, int lane, uint8_t* out) {
  if constexpr (E == 1) {
    uint32_t odd = gpu::shfl_xor(nibble[0], 1, kLanes);
    if ((lane & 1) == 0) out[lane / 2] = static_cast<uint8_t>(nibble[0] | (odd << 4));
  } else {
#pragma unroll
    for (int i = 0; i < E; i += 2)
      out[lane * E / 2 + i / 2] = static_cast<uint8_t>(nibble[i] | (nibble[i + 1] << 4));
  }
}

template <int E>
__device__ void load_nibbles(const uint8_t* in, int lane, uint32_t* nibble) {
#pragma unroll
  for (int i = 0; i < E; ++i) {
    int element = lane * E + i;
    nibble[i] = (in[element / 2] >> (4 * (element & 1))) & 0xfu;
  }
}

__device__ void store_fp16(uint8_t* at, uint16_t h) {
  at[0] = static_cast<uint8_t>(h & 0xff);
  at[1] = static_cast<uint8_t>(h >> 8);
}

__device__ uint16_t load_fp16(const uint8_t* at) {
  return static_cast<uint16_t>(at[0] | (at[1] << 8));
}

__device__ void load_codebook(const TurboQuantCodebook& book, float* centroids, float* boundaries) {
  if (threadIdx.x < 16) centroids[threadIdx.x] = book.centroids[threadIdx.x];
  if (threadIdx.x < 15) boundaries[threadIdx.x] = book.boundaries[threadIdx.x];
  __syncthreads();
}

// k, v: [vectors, head_dim] bf16; slots: [vectors, slot_bytes].
template <int E>
__global__ void __launch_bounds__(kThreads)
    turboquant_quantize_kernel(TurboQuantParams params, const uint16_t* k, const uint16_t* v, uint8_t* slots,
                               int64_t vectors) {
  __shared__ float centroids[16], boundaries[15];
  load_codebook(params.codebook, centroids, boundaries);
  const int d = E * kLanes, lane = threadIdx.x % kLanes;
  const TurboQuantSlotOffsets at{0, d / 2, d / 2 + 2, d + 2, d + 4, d + 6};
  float sign[E];  // this lane's rotation signs, the same for every vector
#pragma unroll
  for (int i = 0; i < E; ++i) sign[i] = rotation_sign(params.rotation_seed, lane * E + i);
  for (int64_t n = int64_t{blockIdx.x} * kTeamsPerBlock + threadIdx.x / kLanes; n < vectors;
       n += int64_t{gridDim.x} * kTeamsPerBlock) {
    uint8_t* slot = slots + n * params.slot_bytes;
    float x[E];
    uint32_t nibble[E];
    load_bf16<E>(k + n * d + lane * E, x);
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < E; ++i) sum += x[i] * x[i];
#pragma unroll
    for (int distance = kLanes / 2; distance > 0; distance >>= 1)
      sum = sum + gpu::shfl_xor(sum, distance, kLanes);
    const float norm = sqrtf(sum);
#pragma unroll
    for (int i = 0; i < E; ++i) x[i] *= sign[i];
    walsh_hadamard<E>(x, lane, d);
    const float inverse_norm = norm > 0.0f ? 1.0f / norm : 0.0f;
#pragma unroll
    for (int i = 0; i < E; ++i) nibble[i] = codebook_index(boundaries, x[i] * inverse_norm);
    store_nibbles<E>(nibble, lane, slot + at.k_indices);

    load_bf16<E>(v + n * d + lane * E, x);
    float lo = INFINITY, hi = -INFINITY;  // NaN inputs are skipped, as fminf/fmaxf do
#pragma unroll
    for (int i = 0; i < E; ++i) {
      lo = fminf(lo, x[i]);
      hi = fmaxf(hi, x[i]);
    }
#pragma unroll
    for (int distance = kLanes / 2; distance > 0; distance >>= 1) {
      lo = fminf(lo, gpu::shfl_xor(lo, distance, kLanes));
      hi = fmaxf(hi, gpu::shfl_xor(hi, distance, kLanes));
    }
    const uint16_t zero_h = float_to_fp16(lo), scale_h = float_to_fp16((hi - lo) / 15.0f);
    const float zero = fp16_to_float(zero_h), inverse = inverse_scale(fp16_to_float(scale_h));
#pragma unroll
    for (int i = 0; i < E; ++i) nibble[i] = affine_nibble(x[i], zero, inverse);
    store_nibbles<E>(nibble, lane, slot + at.v_data);
    if (lane == 0) {
      store_fp16(slot + at.k_norm, float_to_fp16(norm));
      store_fp16(slot + at.v_scale, scale_h);
      store_fp16(slot + at.v_zero, zero_h);
    }
    for (int b = at.end + lane; b < params.slot_bytes; b += kLanes) slot[b] = 0;
  }
}

template <int E>
__global__ void __launch_bounds__(kThreads)
    turboquant_dequantize_kernel(TurboQuantParams params, const uint8_t* slots, uint16_t* k, uint16_t* v,
                                 int64_t vectors) {
  __shared__ float centroids[16], boundaries[15];
  load_codebook(params.codebook, centroids, boundaries);
  const int d = E * kLanes, lane = threadIdx.x % kLanes;
  const TurboQuantSlotOffsets at{0, d / 2, d / 2 + 2, d + 2, d + 4, d + 6};
  const float inverse_d = 1.0f / static_cast<float>(d);
  float sign[E];
#pragma unroll
  for (int i = 0; i < E; ++i) sign[i] = rotation_sign(params.rotation_seed, lane * E + i);
  for (int64_t n = int64_t{blockIdx.x} * kTeamsPerBlock + threadIdx.x / kLanes; n < vectors;
       n += int64_t{gridDim.x} * kTeamsPerBlock) {
    const uint8_t* slot = slots + n * params.slot_bytes;
    float x[E];
    uint32_t nibble[E];
    load_nibbles<E>(slot + at.k_indices, lane, nibble);
#pragma unroll
    for (int i = 0; i < E; ++i) x[i] = centroids[nibble[i]];
    walsh_hadamard<E>(x, lane, d);
    const float scale = fp16_to_float(load_fp16(slot + at.k_norm)) * inverse_d;
#pragma unroll
    for (int i = 0; i < E; ++i) x[i] = sign[i] * x[i] * scale;
    store_bf16<E>(x, k + n * d + lane * E);

    const float zero = fp16_to_float(load_fp16(slot + at.v_zero));
    const float v_scale = fp16_to_float(load_fp16(slot + at.v_scale));
    load_nibbles<E>(slot + at.v_data, lane, nibble);
#pragma unroll
    for (int i = 0; i < E; ++i) x[i] = affine_value(nibble[i], zero, v_scale);
    store_bf16<E>(x, v + n * d + lane * E);
  }
}

// x: [rows, d] bf16; records: [rows, record_bytes]. L = g / 8 lanes per group; every lane of a warp
// runs the same number of rounds so that the shuffles see all their partners.
__global__ void __launch_bounds__(kThreads)
    int4_group_quantize_kernel(Int4GroupParams params, const uint16_t* x, uint8_t* records, int64_t rows) {
  const uint32_t lanes = params.group_size / 8, lane = threadIdx.x % lanes;
  const uint32_t groups_per_row = params.row_elements / params.group_size;
  const uint32_t groups = static_cast<uint32_t>(rows) * groups_per_row;  // < 2^32: checked by the launcher
  const uint32_t teams = gridDim.x * (kThreads / lanes);
  for (uint32_t round = 0; round < groups; round += teams) {
    const uint32_t item = round + (blockIdx.x * kThreads + threadIdx.x) / lanes;
    const bool active = item < groups;
    const int64_t row = active ? item / groups_per_row : 0;
    const uint32_t group = active ? item % groups_per_row : 0;
    float value[8];
    load_bf16<8>(x + row * params.row_elements + group * params.group_size + lane * 8, value);
    float lo = INFINITY, hi = -INFINITY;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      lo = fminf(lo, value[i]);
      hi = fmaxf(hi, value[i]);
    }
    for (int distance = lanes / 2; distance > 0; distance >>= 1) {
      lo = fminf(lo, gpu::shfl_xor(lo, distance, kLanes));
      hi = fmaxf(hi, gpu::shfl_xor(hi, distance, kLanes));
    }
    if (!active) continue;
    const uint16_t zero_h = float_to_fp16(lo), scale_h = float_to_fp16((hi - lo) / 15.0f);
    const float zero = fp16_to_float(zero_h), inverse = inverse_scale(fp16_to_float(scale_h));
    unsigned int packed = 0;
#pragma unroll
    for (int i = 0; i < 8; ++i) packed |= affine_nibble(value[i], zero, inverse) << (4 * i);
    uint8_t* record = records + row * params.record_bytes();
    reinterpret_cast<unsigned int*>(record + group * params.group_size / 2)[lane] = packed;
    if (lane == 0) {
      reinterpret_cast<unsigned int*>(record + params.row_elements / 2)[group] =
          scale_h | (static_cast<unsigned int>(zero_h) << 16);
    }
  }
}

__global__ void __launch_bounds__(kThreads)
    int4_group_dequantize_kernel(Int4GroupParams params, const uint8_t* records, uint16_t* x, int64_t rows) {
  const uint32_t lanes = params.group_size / 8, lane = threadIdx.x % lanes;
  const uint32_t groups_per_row = params.row_elements / params.group_size;
  const uint32_t groups = static_cast<uint32_t>(rows) * groups_per_row;  // < 2^32: checked by the launcher
  for (uint32_t item = (blockIdx.x * kThreads + threadIdx.x) / lanes; item < groups;
       item += gridDim.x * (kThreads / lanes)) {
    const int64_t row = item / groups_per_row;
    const uint32_t group = item % groups_per_row;
    const uint8_t* record = records + row * params.record_bytes();
    const unsigned int packed =
        reinterpret_cast<const unsigned int*>(record + group * params.group_size / 2)[lane];
    const unsigned int scale_zero =
        reinterpret_cast<const unsigned int*>(record + params.row_elements / 2)[group];
    const float scale = fp16_to_float(static_cast<uint16_t>(scale_zero & 0xffffu));
    const float zero = fp16_to_float(static_cast<uint16_t>(scale_zero >> 16));
    float value[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) value[i] = affine_value((packed >> (4 * i)) & 0xfu, zero, scale);
    store_bf16<8>(value, x + row * params.row_elements + group * params.group_size + lane * 8);
  }
}

void require_aligned(const void* p, uintptr_t alignment, const char* what) {
  if (reinterpret_cast<uintptr_t>(p) % alignment != 0) {
    throw std::invalid_argument(std::string(what) + " must be " + std::to_string(alignment) +
                                "-byte aligned");
  }
}

// Enough blocks for every item, but no more than the GPU holds at once: the kernels stride over the
// rest, so per-lane setup (codebook, rotation signs) is paid once per resident thread.
unsigned blocks_for(int64_t items, int64_t items_per_block) {
  static const int64_t resident = gpu::resident_blocks(kThreads);
  int64_t blocks = (items + items_per_block - 1) / items_per_block;
  return static_cast<unsigned>(blocks < resident ? blocks : resident);
}

void check_turboquant(const TurboQuantParams& params, const void* a, const void* b) {
  const int d = params.head_dim;
  if (d < 32 || d > 512 || (d & (d - 1)) != 0 || params.slot_bytes < turboquant_slot_offsets(d).end) {
    throw std::invalid_argument("turboquant: bad params (head_dim " + std::to_string(d) + ", slot_bytes " +
                                std::to_string(params.slot_bytes) + "); build them with turboquant_params()");
  }
  require_aligned(a, 16, "turboquant: k");
  require_aligned(b, 16, "turboquant: v");
}

// Calls f(std::integral_constant<int, E>) for E = head_dim / 32.
template <typename F>
void with_elements_per_lane(int head_dim, F&& f) {
  switch (head_dim / kLanes) {
    case 1:
      return f(std::integral_constant<int, 1>{});
    case 2:
      return f(std::integral_constant<int, 2>{});
    case 4:
      return f(std::integral_constant<int, 4>{});
    case 8:
      return f(std::integral_constant<int, 8>{});
    default:
      return f(std::integral_constant<int, 16>{});
  }
}

void check_int4(const Int4GroupParams& params, const void* x, const void* records, int64_t rows) {
  const int g = params.group_size;
  if (rows > 0 && rows * (params.row_elements / std::max(g, 1)) >= (int64_t{1} << 32)) {
    throw std::invalid_argument("int4: more than 2^32 groups in one launch; split the call");
  }
  if (g < 8 || g > 256 || (g & (g - 1)) != 0 || params.row_elements % g != 0) {
    throw std::invalid_argument("int4: bad params; build them with int4_group_params()");
  }
  require_aligned(x, 16, "int4: x");
  require_aligned(records, 4, "int4: records");
}

}  // namespace

void turboquant_quantize(const TurboQuantParams& params, const uint16_t* k, const uint16_t* v, uint8_t* slots,
                         int64_t vectors, gpuStream_t stream) {
  check_turboquant(params, k, v);
  if (vectors <= 0) return;
  with_elements_per_lane(params.head_dim, [&](auto e) {
    turboquant_quantize_kernel<decltype(e)::value>
        <<<blocks_for(vectors, kTeamsPerBlock), kThreads, 0, stream>>>(params, k, v, slots, vectors);
  });
  KVTIER_GPU_CHECK_LAUNCH("turboquant_quantize_kernel");
}

void turboquant_dequantize(const TurboQuantParams& params, const uint8_t* slots, uint16_t* k, uint16_t* v,
                           int64_t vectors, gpuStream_t stream) {
  check_turboquant(params, k, v);
  if (vectors <= 0) return;
  with_elements_per_lane(params.head_dim, [&](auto e) {
    turboquant_dequantize_kernel<decltype(e)::value>
        <<<blocks_for(vectors, kTeamsPerBlock), kThreads, 0, stream>>>(params, slots, k, v, vectors);
  });
  KVTIER_GPU_CHECK_LAUNCH("turboquant_dequantize_kernel");
}

void int4_group_quantize(const Int4GroupParams& params, const uint16_t* x, uint8_t* records, int64_t rows,
                         gpuStream_t stream) {
  check_int4(params, x, records, rows);
  if (rows <= 0) return;
  const int64_t groups = rows * (params.row_elements / params.group_size);
  int4_group_quantize_kernel<<<blocks_for(groups, kThreads / (params.group_size / 8)), kThreads, 0, stream>>>(
      params, x, records, rows);
  KVTIER_GPU_CHECK_LAUNCH("int4_group_quantize_kernel");
}

void int4_group_dequantize(const Int4GroupParams& params, const uint8_t* records, uint16_t* x, int64_t rows,
                           gpuStream_t stream) {
  check_int4(params, x, records, rows);
  if (rows <= 0) return;
  const int64_t groups = rows * (params.row_elements / params.group_size);
  int4_group_dequantize_kernel<<<blocks_for(groups, kThreads / (params.group_size / 8)), kThreads, 0,
                                 stream>>>(params, records, x, rows);
  KVTIER_GPU_CHECK_LAUNCH("int4_group_dequantize_kernel");
}

}  // namespace kvtier::hw
