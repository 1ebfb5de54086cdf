// Elementwise kernels of the forward pass (contract in elementwise.h).
#include "hw/model/elementwise.h"

#include <algorithm>
#include <cmath>

#include "hw/gpu/check.h"
#include "hw/gpu/device.h"
#include "hw/kernels/quant_math.h"

namespace kvtier::hw {
namespace {

constexpr int kThreads = 256;

struct Bf16x8 {
  uint4 bits;
  __device__ float get(int i) const {
    const uint32_t word = (&bits.x)[i / 2];
    return bits_float(i % 2 == 0 ? word << 16 : word & 0xffff0000u);
  }
};

__device__ inline uint4 pack8(const float (&v)[8]) {
  return make_uint4(gpu::pack_bf16x2_rn(v[0], v[1]), gpu::pack_bf16x2_rn(v[2], v[3]),
                    gpu::pack_bf16x2_rn(v[4], v[5]), gpu::pack_bf16x2_rn(v[6], v[7]));
}

// The sum of `value` over the block (kThreads threads), in every thread.
__device__ inline float block_sum(float value, float* scratch) {
  scratch[threadIdx.x] = value;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (static_cast<int>(threadIdx.x) < stride) scratch[threadIdx.x] += scratch[threadIdx.x + stride];
    __syncthreads();
  }
  const float total = scratch[0];
  __syncthreads();
  return total;
}

__global__ void __launch_bounds__(kThreads) rmsnorm_kernel(const uint16_t* x, const uint16_t* weight, uint16_t* out,
                                                           int width, float eps, const int* rows_index) {
  __shared__ float scratch[kThreads];
  const int64_t row = rows_index != nullptr ? rows_index[blockIdx.x] : blockIdx.x;
  const uint4* in = reinterpret_cast<const uint4*>(x + row * width);
  float squares = 0;
  for (int c = static_cast<int>(threadIdx.x); c < width / 8; c += kThreads) {
    const Bf16x8 v{in[c]};
    for (int i = 0; i < 8; ++i) squares += v.get(i) * v.get(i);
  }
  const float scale = rsqrtf(block_sum(squares, scratch) / static_cast<float>(width) + eps);
  uint4* dst = reinterpret_cast<uint4*>(out + int64_t{blockIdx.x} * width);
  for (int c = static_cast<int>(threadIdx.x); c < width / 8; c += kThreads) {
    const Bf16x8 v{in[c]}, w{reinterpret_cast<const uint4*>(weight)[c]};
    float r[8];
    for (int i = 0; i < 8; ++i) r[i] = v.get(i) * scale * w.get(i);
    dst[c] = pack8(r);
  }
}

struct RopeParams {
  const uint16_t* qkv;
  StepBatch batch;
  PagedKvLayer kv;
  uint16_t* q_out;
  int heads;
  int kv_heads;
  float log2_theta;
};

// One block per token. Rotation pairs (head, i) for the heads + kv_heads rotated heads, then V in 16-byte chunks.
template <int D>
__global__ void __launch_bounds__(kThreads) rope_and_cache_kernel(RopeParams p) {
  const int t = static_cast<int>(blockIdx.x);
  int seq = 0;
  while (p.batch.query_start[seq + 1] <= t) ++seq;
  const int position = p.batch.context_tokens[seq] + t - p.batch.query_start[seq];
  const int page = p.batch.block_table[int64_t{seq} * p.batch.block_table_stride + position / p.kv.block_tokens];
  uint16_t* page_row = p.kv.pool + page * p.kv.page_stride + p.kv.k_offset +
                       int64_t{position % p.kv.block_tokens} * D;
  const int width = (p.heads + 2 * p.kv_heads) * D;
  const uint16_t* in = p.qkv + int64_t{t} * width;
  for (int pair = static_cast<int>(threadIdx.x); pair < (p.heads + p.kv_heads) * (D / 2); pair += kThreads) {
    const int head = pair / (D / 2), i = pair % (D / 2);
    const float angle = static_cast<float>(position) * exp2f(-2.0f * static_cast<float>(i) / D * p.log2_theta);
    float sine, cosine;
    sincosf(angle, &sine, &cosine);
    const float x1 = bf16_to_float(in[head * D + i]), x2 = bf16_to_float(in[head * D + i + D / 2]);
    const uint16_t r1 = float_to_bf16(x1 * cosine - x2 * sine), r2 = float_to_bf16(x2 * cosine + x1 * sine);
    uint16_t* dst = head < p.heads ? p.q_out + (int64_t{t} * p.heads + head) * D
                                   : page_row + (head - p.heads) * p.kv.head_stride;
    dst[i] = r1;
    dst[i + D / 2] = r2;
  }
  for (int c = static_cast<int>(threadIdx.x); c < p.kv_heads * (D / 8); c += kThreads) {
    const int head = c / (D / 8), chunk = c % (D / 8);
    const uint4 v = reinterpret_cast<const uint4*>(in + (p.heads + p.kv_heads + head) * D)[chunk];
    reinterpret_cast<uint4*>(page_row + p.kv.v_offset + head * p.kv.head_stride)[chunk] = v;
  }
}

__global__ void silu_mul_kernel(const uint16_t* gate_up, uint16_t* out, int64_t rows, int width) {
  const int64_t chunks = rows * (width / 8);
  for (int64_t c = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; c < chunks; c += int64_t{gridDim.x} * blockDim.x) {
    const int64_t row = c / (width / 8), col = c % (width / 8);
    const uint4* in = reinterpret_cast<const uint4*>(gate_up + row * 2 * width);
    const Bf16x8 gate{in[col]}, up{in[col + width / 8]};
    float r[8];
    for (int i = 0; i < 8; ++i) r[i] = gate.get(i) / (1.0f + expf(-gate.get(i))) * up.get(i);
    reinterpret_cast<uint4*>(out + row * width)[col] = pack8(r);
  }
}

__global__ void embed_kernel(const int* token_ids, const uint16_t* table, uint16_t* out, int hidden) {
  const uint4* src = reinterpret_cast<const uint4*>(table + int64_t{token_ids[blockIdx.x]} * hidden);
  uint4* dst = reinterpret_cast<uint4*>(out + int64_t{blockIdx.x} * hidden);
  for (int c = static_cast<int>(threadIdx.x); c < hidden / 8; c += static_cast<int>(blockDim.x)) dst[c] = src[c];
}

__device__ inline uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

__global__ void fill_random_kernel(uint16_t* data, int64_t count, uint64_t seed, float scale, float offset) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count; i += int64_t{gridDim.x} * blockDim.x) {
    const float unit = static_cast<float>(mix(seed * 0x9e3779b97f4a7c15ull + static_cast<uint64_t>(i)) >> 40) *
                       (1.0f / 8388608.0f) - 1.0f;
    data[i] = float_to_bf16(offset + scale * unit);
  }
}

int grid_for(int64_t items) {
  return static_cast<int>(std::min<int64_t>((items + kThreads - 1) / kThreads, 65536));
}

}  // namespace

void rmsnorm(const uint16_t* x, const uint16_t* weight, uint16_t* out, int rows, int width, float eps,
             const int* rows_index, gpuStream_t stream) {
  if (rows == 0) return;
  rmsnorm_kernel<<<rows, kThreads, 0, stream>>>(x, weight, out, width, eps, rows_index);
  KVTIER_GPU_CHECK_LAUNCH("rmsnorm_kernel");
}

void rope_and_cache(const uint16_t* qkv, const StepBatch& batch, const TransformerShape& shape,
                    const PagedKvLayer& kv, uint16_t* q_out, gpuStream_t stream) {
  if (batch.total_new_tokens == 0) return;
  const RopeParams params{qkv, batch, kv, q_out, shape.heads, shape.kv_heads,
                          static_cast<float>(std::log2(static_cast<double>(shape.rope_theta)))};
  if (shape.head_dim == 64) {
    rope_and_cache_kernel<64><<<batch.total_new_tokens, kThreads, 0, stream>>>(params);
  } else {
    rope_and_cache_kernel<128><<<batch.total_new_tokens, kThreads, 0, stream>>>(params);
  }
  KVTIER_GPU_CHECK_LAUNCH("rope_and_cache_kernel");
}

void silu_mul(const uint16_t* gate_up, uint16_t* out, int64_t rows, int width, gpuStream_t stream) {
  if (rows == 0) return;
  silu_mul_kernel<<<grid_for(rows * width / 8), kThreads, 0, stream>>>(gate_up, out, rows, width);
  KVTIER_GPU_CHECK_LAUNCH("silu_mul_kernel");
}

void embed_tokens(const int* token_ids, const uint16_t* table, uint16_t* out, int tokens, int hidden,
                  gpuStream_t stream) {
  if (tokens == 0) return;
  embed_kernel<<<tokens, 128, 0, stream>>>(token_ids, table, out, hidden);
  KVTIER_GPU_CHECK_LAUNCH("embed_kernel");
}

void fill_random(uint16_t* data, int64_t count, uint64_t seed, float scale, float offset, gpuStream_t stream) {
  if (count == 0) return;
  fill_random_kernel<<<grid_for(count), kThreads, 0, stream>>>(data, count, seed, scale, offset);
  KVTIER_GPU_CHECK_LAUNCH("fill_random_kernel");
}

}  // namespace kvtier::hw
