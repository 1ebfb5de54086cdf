// Paged attention kernels (contract in attention.h, work mapping in attention_plan.h).
#include "hw/model/attention.h"

#include <cmath>
#include <stdexcept>

#include "hw/model/attention_hopper.h"
#include "hw/model/attention_params.h"
#include "hw/model/attention_plan.h"
#include "hw/gpu/check.h"
#include "hw/gpu/device.h"
#include "hw/kernels/quant_math.h"

namespace kvtier::hw {
namespace {

#if defined(KVTIER_GPU_CUDA)

// Threads of a block of kRows query rows: a warp per 16 rows.
template <int kRows>
constexpr int kThreadsFor = kRows / 16 * 32;
constexpr int kStages = 3;  // K/V tiles in shared memory: one computed on, two in flight

__device__ inline uint32_t shared_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
// 16 bytes from global to shared memory without passing through registers; zero-fills when !valid.
__device__ inline void copy_async_16(uint32_t dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0));
}
__device__ inline void copy_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int kPending>
__device__ inline void copy_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}
__device__ inline void load_matrix_x4(uint32_t (&r)[4], uint32_t address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}
__device__ inline void load_matrix_x4_transposed(uint32_t (&r)[4], uint32_t address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}
// c += a (16x16, row-major) * b (16x8, column-major), bf16 in, fp32 accumulate. Not volatile: registers
// in, registers out, so the compiler may interleave it with the next fragment loads.
__device__ inline void mma_bf16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// 2^x by the special-function unit (flushes subnormal results to zero, which the softmax cannot tell).
__device__ inline float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// Shared-memory tiles are rows of D bf16 in 16-byte chunks, chunk c of row r stored at c ^ (r % 8): the 8
// rows one ldmatrix phase reads fall in 8 different bank groups.
template <int D>
__device__ inline int swizzled(int row, int chunk) {
  return row * D + ((chunk ^ (row & 7)) << 3);
}

// Rows of a K/V tile each thread copies (one 16-byte chunk per row and pass).
template <int D, int kRows>
constexpr int kKvPasses = kAttentionKeys / (kThreadsFor<kRows> / (D / 8));

// The pages holding this thread's rows of the tile at keys [n0, n0 + 64); -1 at or past key_stop. Fetched a
// tile before the copy that uses them, so that the block-table read is off the copy's critical path.
template <int D, int kRows>
__device__ inline void fetch_tile_pages(const AttentionParams& p, const BlockWork& w, int n0, int (&pages)[kKvPasses<D, kRows>]) {
  constexpr int kChunks = D / 8, kRowsPerPass = kThreadsFor<kRows> / kChunks;
  const int* table = p.batch.block_table + int64_t{w.seq} * p.batch.block_table_stride;
#pragma unroll
  for (int pass = 0; pass < kKvPasses<D, kRows>; ++pass) {
    const int key = n0 + static_cast<int>(threadIdx.x) / kChunks + pass * kRowsPerPass;
    pages[pass] = key < w.key_stop ? table[key / p.kv.block_tokens] : -1;
  }
}

// Copies K and V of keys [n0, n0 + 64) from `pages` into one pipeline stage, zero-filling missing keys.
template <int D, int kRows>
__device__ inline void load_kv_tile(const AttentionParams& p, int kv_head, int n0, const int (&pages)[kKvPasses<D, kRows>],
                                    uint16_t* k_stage, uint16_t* v_stage) {
  constexpr int kChunks = D / 8, kRowsPerPass = kThreadsFor<kRows> / kChunks;
  const int chunk = static_cast<int>(threadIdx.x) % kChunks;
  const uint16_t* head_base = p.kv.pool + p.kv.k_offset + kv_head * p.kv.head_stride + chunk * 8;
#pragma unroll
  for (int pass = 0; pass < kKvPasses<D, kRows>; ++pass) {
    const int row = static_cast<int>(threadIdx.x) / kChunks + pass * kRowsPerPass;
    const bool valid = pages[pass] >= 0;
    const uint16_t* k = valid ? head_base + pages[pass] * p.kv.page_stride + ((n0 + row) % p.kv.block_tokens) * D
                              : p.kv.pool;
    copy_async_16(shared_address(k_stage + swizzled<D>(row, chunk)), k, valid);
    copy_async_16(shared_address(v_stage + swizzled<D>(row, chunk)), valid ? k + p.kv.v_offset : k, valid);
  }
}

template <int D, int kRows>
__device__ inline void load_query_tile(const AttentionParams& p, const BlockWork& w, int kv_head, uint16_t* tile) {
  constexpr int kChunks = D / 8, kRowsPerPass = kThreadsFor<kRows> / kChunks;
  const int chunk = static_cast<int>(threadIdx.x) % kChunks;
#pragma unroll
  for (int pass = 0; pass < kRows / kRowsPerPass; ++pass) {
    const int row = static_cast<int>(threadIdx.x) / kChunks + pass * kRowsPerPass;
    const int token = row / p.ratio;
    const bool valid = token < w.tile_tokens && row < p.tokens_per_tile * p.ratio;
    const uint16_t* src = p.q;
    if (valid) {
      const int head = kv_head * p.ratio + row % p.ratio;
      src = p.q + ((int64_t{w.q0} + w.tok0 + token) * p.heads + head) * D + chunk * 8;
    }
    copy_async_16(shared_address(tile + swizzled<D>(row, chunk)), src, valid);
  }
}

template <int D, int kRows>
__global__ void __launch_bounds__(kThreadsFor<kRows>, 128 / kRows) paged_attention_mma(AttentionParams p) {
  extern __shared__ __align__(128) uint16_t shared[];
  uint16_t* q_tile = shared;
  uint16_t* k_tiles = q_tile + kRows * D;        // kStages stages
  uint16_t* v_tiles = k_tiles + kStages * kAttentionKeys * D;  // kStages stages
  const int kv_head = static_cast<int>(blockIdx.x);
  BlockWork w;
  if (!block_work(p, p.query_tiles - 1 - static_cast<int>(blockIdx.y), w)) return;

  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int quad_row = lane / 4, quad_col = lane % 4;
  // This thread's two rows of the warp's 16 (quad_row and quad_row + 8): their tokens and causal bounds.
  int token[2], key_limit[2];
  bool row_valid[2];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int row = warp * 16 + quad_row + 8 * i;
    token[i] = row / p.ratio;
    row_valid[i] = token[i] < w.tile_tokens && row < p.tokens_per_tile * p.ratio;
    key_limit[i] = min(w.key_stop, w.context + w.tok0 + token[i] + 1);
  }
  const bool warp_active = (warp * 16) / p.ratio < w.tile_tokens && warp * 16 < p.tokens_per_tile * p.ratio;

  float o[D / 8][4] = {};
  float row_max[2] = {-INFINITY, -INFINITY}, row_sum[2] = {0, 0};
  const bool has_keys = w.key_begin < w.key_stop;
  const int tiles = has_keys ? (w.key_stop - w.key_begin + kAttentionKeys - 1) / kAttentionKeys : 0;
  // Pipeline: tile j sits in stage j % kStages; groups committed in order Q, tile 0, tile 1, ...
  int pages_ahead[kKvPasses<D, kRows>];
  if (has_keys) {
    load_query_tile<D, kRows>(p, w, kv_head, q_tile);
    copy_async_commit();
#pragma unroll
    for (int j = 0; j < kStages - 1; ++j) {
      if (j < tiles) {
        fetch_tile_pages<D, kRows>(p, w, w.key_begin + j * kAttentionKeys, pages_ahead);
        load_kv_tile<D, kRows>(p, kv_head, w.key_begin + j * kAttentionKeys, pages_ahead, k_tiles + j * kAttentionKeys * D,
                        v_tiles + j * kAttentionKeys * D);
      }
      copy_async_commit();
    }
    if (kStages - 1 < tiles) fetch_tile_pages<D, kRows>(p, w, w.key_begin + (kStages - 1) * kAttentionKeys, pages_ahead);
    copy_async_wait<kStages - 1>();  // Q has landed
    __syncthreads();
  }
  uint32_t qf[D / 16][4];
  if (has_keys && warp_active) {
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      load_matrix_x4(qf[kk], shared_address(q_tile + swizzled<D>(warp * 16 + lane % 16, kk * 2 + lane / 16)));
    }
  }
  const float scale_log2 = p.scale * 1.4426950408889634f;
  for (int j = 0; j < tiles; ++j) {
    const int n0 = w.key_begin + j * kAttentionKeys;
    const uint16_t* k_tile = k_tiles + (j % kStages) * kAttentionKeys * D;
    const uint16_t* v_tile = v_tiles + (j % kStages) * kAttentionKeys * D;
    copy_async_wait<kStages - 2>();  // tile j has landed (later tiles may be in flight)
    // Every warp is done with tile j - 1, whose stage the load below overwrites.
    __syncthreads();
    const int ahead = j + kStages - 1;
    if (ahead < tiles) {
      load_kv_tile<D, kRows>(p, kv_head, w.key_begin + ahead * kAttentionKeys, pages_ahead,
                      k_tiles + (ahead % kStages) * kAttentionKeys * D, v_tiles + (ahead % kStages) * kAttentionKeys * D);
    }
    copy_async_commit();
    if (ahead + 1 < tiles) fetch_tile_pages<D, kRows>(p, w, w.key_begin + (ahead + 1) * kAttentionKeys, pages_ahead);
    float s[kAttentionKeys / 8][4] = {};
    if (warp_active) {
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) {
#pragma unroll
        for (int np = 0; np < kAttentionKeys / 16; ++np) {
          uint32_t b[4];
          const int matrix = lane / 8;
          load_matrix_x4(b, shared_address(k_tile + swizzled<D>(np * 16 + lane % 8 + (matrix >> 1) * 8,
                                                                 kk * 2 + (matrix & 1))));
          mma_bf16(s[2 * np], qf[kk], b[0], b[1]);
          mma_bf16(s[2 * np + 1], qf[kk], b[2], b[3]);
        }
      }
    }
    uint32_t pf[kAttentionKeys / 16][4];
    if (warp_active) {
      const bool needs_mask = n0 + kAttentionKeys > min(key_limit[0], key_limit[1]);
      float tile_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
      for (int n = 0; n < kAttentionKeys / 8; ++n) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          if (needs_mask && n0 + n * 8 + 2 * quad_col + (e & 1) >= key_limit[e / 2]) s[n][e] = -INFINITY;
          tile_max[e / 2] = fmaxf(tile_max[e / 2], s[n][e]);
        }
      }
      float scaled_max[2], alpha[2];
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        tile_max[i] = fmaxf(tile_max[i], gpu::shfl_xor(tile_max[i], 1, 32));
        tile_max[i] = fmaxf(tile_max[i], gpu::shfl_xor(tile_max[i], 2, 32));
        const float new_max = fmaxf(row_max[i], tile_max[i]);
        scaled_max[i] = new_max == -INFINITY ? 0.0f : new_max * scale_log2;
        alpha[i] = fast_exp2(row_max[i] * scale_log2 - scaled_max[i]);
        row_max[i] = new_max;
        row_sum[i] *= alpha[i];
      }
#pragma unroll
      for (int n = 0; n < kAttentionKeys / 8; ++n) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          s[n][e] = fast_exp2(s[n][e] * scale_log2 - scaled_max[e / 2]);
          row_sum[e / 2] += s[n][e];
        }
      }
#pragma unroll
      for (int n = 0; n < D / 8; ++n) {
        o[n][0] *= alpha[0];
        o[n][1] *= alpha[0];
        o[n][2] *= alpha[1];
        o[n][3] *= alpha[1];
      }
#pragma unroll
      for (int kk = 0; kk < kAttentionKeys / 16; ++kk) {
        pf[kk][0] = gpu::pack_bf16x2_rn(s[2 * kk][0], s[2 * kk][1]);
        pf[kk][1] = gpu::pack_bf16x2_rn(s[2 * kk][2], s[2 * kk][3]);
        pf[kk][2] = gpu::pack_bf16x2_rn(s[2 * kk + 1][0], s[2 * kk + 1][1]);
        pf[kk][3] = gpu::pack_bf16x2_rn(s[2 * kk + 1][2], s[2 * kk + 1][3]);
      }
    }
    if (warp_active) {
#pragma unroll
      for (int kk = 0; kk < kAttentionKeys / 16; ++kk) {
#pragma unroll
        for (int dp = 0; dp < D / 16; ++dp) {
          uint32_t b[4];
          const int matrix = lane / 8;
          load_matrix_x4_transposed(
              b, shared_address(v_tile + swizzled<D>(kk * 16 + lane % 8 + (matrix & 1) * 8, dp * 2 + (matrix >> 1))));
          mma_bf16(o[2 * dp], pf[kk], b[0], b[1]);
          mma_bf16(o[2 * dp + 1], pf[kk], b[2], b[3]);
        }
      }
    }
  }
  copy_async_wait<0>();
  if (!warp_active) return;
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    row_sum[i] += gpu::shfl_xor(row_sum[i], 1, 32);
    row_sum[i] += gpu::shfl_xor(row_sum[i], 2, 32);
  }
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    if (!row_valid[i]) continue;
    const int row = warp * 16 + quad_row + 8 * i;
    const int t = w.q0 + w.tok0 + token[i];
    const int head = kv_head * p.ratio + row % p.ratio;
    const float inverse = row_sum[i] > 0 ? 1.0f / row_sum[i] : 0.0f;
    if (p.splits == 1) {
      uint16_t* dst = p.out + (int64_t{t} * p.heads + head) * D + 2 * quad_col;
#pragma unroll
      for (int n = 0; n < D / 8; ++n) {
        *reinterpret_cast<uint32_t*>(dst + n * 8) = gpu::pack_bf16x2_rn(o[n][2 * i] * inverse, o[n][2 * i + 1] * inverse);
      }
    } else {
      const int64_t r = (int64_t{static_cast<int>(blockIdx.z) % p.splits} * p.batch.total_new_tokens + t) * p.heads + head;
      float* dst = p.partial_out + r * D + 2 * quad_col;
#pragma unroll
      for (int n = 0; n < D / 8; ++n) {
        *reinterpret_cast<float2*>(dst + n * 8) = make_float2(o[n][2 * i] * inverse, o[n][2 * i + 1] * inverse);
      }
      if (quad_col == 0) {
        p.partial_lse[r] = row_sum[i] > 0 ? row_max[i] * p.scale + logf(row_sum[i]) : -INFINITY;
      }
    }
  }
}

template <int D, int kRows>
constexpr int mma_shared_bytes() {
  return (kRows + 2 * kStages * kAttentionKeys) * D * 2;
}

template <int D, int kRows>
void allow_mma_shared_memory() {
  static const bool configured = [] {
    KVTIER_GPU_CHECK(gpuFuncSetAttribute(reinterpret_cast<const void*>(&paged_attention_mma<D, kRows>),
                                         gpuFuncAttributeMaxDynamicSharedMemorySize, mma_shared_bytes<D, kRows>()));
    return true;
  }();
  (void)configured;
}

template <int D, int kRows>
int mma_blocks_per_multiprocessor() {
  allow_mma_shared_memory<D, kRows>();
  int blocks = 0;
  KVTIER_GPU_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &blocks, reinterpret_cast<const void*>(&paged_attention_mma<D, kRows>), kThreadsFor<kRows>,
      mma_shared_bytes<D, kRows>()));
  return blocks;
}

template <int D, int kRows>
void launch_attention(const AttentionParams& params, gpuStream_t stream) {
  constexpr int shared_bytes = mma_shared_bytes<D, kRows>();
  allow_mma_shared_memory<D, kRows>();
  const dim3 grid(params.kv.kv_heads, params.query_tiles, params.batch.sequences * params.splits);
  paged_attention_mma<D, kRows><<<grid, kThreadsFor<kRows>, shared_bytes, stream>>>(params);
  KVTIER_GPU_CHECK_LAUNCH("paged_attention_mma");
}

#else  // HIP: the portable kernel.

constexpr int kThreads = 128;

// One block per (query tile row = token, head); keys in chunks of kThreads, one key per thread for the
// scores, one output dimension per thread for the sums, online softmax across chunks.
template <int D>
__global__ void __launch_bounds__(kThreads) paged_attention_portable(AttentionParams p) {
  __shared__ float query[D];
  __shared__ float weights[kThreads];
  __shared__ float reduce[kThreads];
  const int head = static_cast<int>(blockIdx.x), kv_head = head / p.ratio;
  BlockWork w;
  if (!block_work(p, static_cast<int>(blockIdx.y) / p.tokens_per_tile, w)) return;
  const int token = static_cast<int>(blockIdx.y) % p.tokens_per_tile;
  if (token >= w.tile_tokens) return;
  const int tid = static_cast<int>(threadIdx.x);
  const int t = w.q0 + w.tok0 + token;
  const int key_limit = min(w.key_stop, w.context + w.tok0 + token + 1);
  for (int e = tid; e < D; e += kThreads) query[e] = bf16_to_float(p.q[(int64_t{t} * p.heads + head) * D + e]);
  __syncthreads();
  const int* pages = p.batch.block_table + int64_t{w.seq} * p.batch.block_table_stride;
  auto element = [&](int key, int k_or_v, int e) {
    const int64_t at = pages[key / p.kv.block_tokens] * p.kv.page_stride + p.kv.k_offset + k_or_v * p.kv.v_offset +
                       kv_head * p.kv.head_stride + (key % p.kv.block_tokens) * D + e;
    return bf16_to_float(p.kv.pool[at]);
  };
  float running_max = -INFINITY, running_sum = 0, acc[(D + kThreads - 1) / kThreads] = {};
  for (int k0 = w.key_begin; k0 < key_limit; k0 += kThreads) {
    const int key = k0 + tid;
    float score = -INFINITY;
    if (key < key_limit) {
      score = 0;
      for (int e = 0; e < D; ++e) score += query[e] * element(key, 0, e);
      score *= p.scale;
    }
    reduce[tid] = score;
    __syncthreads();
    float chunk_max = -INFINITY;
    for (int i = 0; i < kThreads; ++i) chunk_max = fmaxf(chunk_max, reduce[i]);
    const float new_max = fmaxf(running_max, chunk_max);
    const float alpha = expf(running_max - new_max);
    weights[tid] = key < key_limit ? expf(score - new_max) : 0.0f;
    __syncthreads();
    float chunk_sum = 0;
    for (int i = 0; i < kThreads; ++i) chunk_sum += weights[i];
    running_sum = running_sum * alpha + chunk_sum;
    running_max = new_max;
    for (int e = tid, n = 0; e < D; e += kThreads, ++n) {
      float sum = 0;
      for (int i = 0; i < kThreads && k0 + i < key_limit; ++i) sum += weights[i] * element(k0 + i, 1, e);
      acc[n] = acc[n] * alpha + sum;
    }
    __syncthreads();
  }
  const float inverse = running_sum > 0 ? 1.0f / running_sum : 0.0f;
  if (p.splits == 1) {
    for (int e = tid, n = 0; e < D; e += kThreads, ++n) {
      p.out[(int64_t{t} * p.heads + head) * D + e] = float_to_bf16(acc[n] * inverse);
    }
  } else {
    float scaled[(D + kThreads - 1) / kThreads];
    for (int n = 0; n * kThreads < D; ++n) scaled[n] = acc[n] * inverse;
    const int64_t row = (int64_t{static_cast<int>(blockIdx.z) % p.splits} * p.batch.total_new_tokens + t) * p.heads + head;
    for (int e = tid, n = 0; e < D; e += kThreads, ++n) p.partial_out[row * D + e] = scaled[n];
    if (tid == 0) p.partial_lse[row] = running_sum > 0 ? running_max + logf(running_sum) : -INFINITY;
  }
}

template <int D, int kRows>
void launch_attention(const AttentionParams& params, gpuStream_t stream) {
  const dim3 grid(params.heads, params.query_tiles * params.tokens_per_tile, params.batch.sequences * params.splits);
  paged_attention_portable<D><<<grid, kThreads, 0, stream>>>(params);
  KVTIER_GPU_CHECK_LAUNCH("paged_attention_portable");
}

#endif

// out[t][h] = sum over splits of exp(lse_s - max) * o_s / sum of exp(lse_s - max); one block per (token, head).
__global__ void combine_splits(AttentionParams p, int d) {
  const int64_t row = blockIdx.x;
  const int64_t rows = int64_t{p.batch.total_new_tokens} * p.heads;
  float max_lse = -INFINITY;
  for (int s = 0; s < p.splits; ++s) max_lse = fmaxf(max_lse, p.partial_lse[s * rows + row]);
  for (int e = static_cast<int>(threadIdx.x); e < d; e += static_cast<int>(blockDim.x)) {
    float sum = 0, weight_sum = 0;
    for (int s = 0; s < p.splits; ++s) {
      const float lse = p.partial_lse[s * rows + row];
      if (lse == -INFINITY) continue;
      const float weight = expf(lse - max_lse);
      sum += weight * p.partial_out[(s * rows + row) * d + e];
      weight_sum += weight;
    }
    p.out[row * d + e] = float_to_bf16(weight_sum > 0 ? sum / weight_sum : 0.0f);
  }
}

}  // namespace

bool attention_uses_wgmma(int head_dim, int heads, int kv_heads, int block_tokens, int splits, int rows) {
#if defined(KVTIER_HOPPER_ATTENTION)
  static const bool device = hopper_attention_device();
  return device && head_dim == kHopperAttentionHeadDim && block_tokens >= kHopperAttentionMinBlockTokens &&
         splits == 1 && rows == kHopperAttentionRows && kv_heads > 0 && heads % kv_heads == 0 &&
         heads / kv_heads <= kHopperAttentionRows;
#else
  (void)head_dim, (void)heads, (void)kv_heads, (void)block_tokens, (void)splits, (void)rows;
  return false;
#endif
}

std::optional<AttentionCosts> paged_attention_tiling(int head_dim, int heads, int kv_heads, int block_tokens,
                                                     int rows) {
#if defined(KVTIER_GPU_CUDA)
  if (rows != 64 && rows != 128) throw std::invalid_argument("paged_attention_tiling: rows must be 64 or 128");
  if (head_dim != 64 && head_dim != 128) throw std::invalid_argument("paged_attention_tiling: head_dim must be 64 or 128");
  AttentionCosts costs;
  costs.query_rows = rows;
  costs.max_splits = kAttentionMaxSplits;
  costs.min_split_keys = 4 * kAttentionKeys;
  KVTIER_GPU_CHECK(gpuDeviceGetAttribute(&costs.multiprocessors, gpuDevAttrMultiProcessorCount, 0));
  const int mma_blocks = head_dim == 64 ? (rows == 64 ? mma_blocks_per_multiprocessor<64, 64>()
                                                      : mma_blocks_per_multiprocessor<64, 128>())
                                        : (rows == 64 ? mma_blocks_per_multiprocessor<128, 64>()
                                                      : mma_blocks_per_multiprocessor<128, 128>());
  costs.split.key_tile = kAttentionKeys;
  costs.split.slots = mma_blocks * costs.multiprocessors;
  costs.unsplit = costs.split;
#if defined(KVTIER_HOPPER_ATTENTION)
  if (attention_uses_wgmma(head_dim, heads, kv_heads, block_tokens, 1, rows)) {
    costs.unsplit.key_tile = kHopperAttentionKeys;
    costs.unsplit.slots = hopper_attention_blocks_per_multiprocessor() * costs.multiprocessors;
  }
#else
  (void)heads, (void)kv_heads, (void)block_tokens;
#endif
  return costs;
#else
  (void)head_dim, (void)heads, (void)kv_heads, (void)block_tokens, (void)rows;
  return std::nullopt;
#endif
}

void paged_attention(const StepBatch& batch, const PagedKvLayer& kv, const uint16_t* q, uint16_t* out, int heads,
                     float scale, int splits, float* workspace, gpuStream_t stream, int rows, AttentionKernel kernel) {
  if (rows != 64 && rows != 128) throw std::invalid_argument("paged_attention: rows must be 64 or 128");
  if (kv.head_dim != 64 && kv.head_dim != 128) throw std::invalid_argument("paged_attention: head_dim must be 64 or 128");
  if (kv.kv_heads <= 0 || heads % kv.kv_heads != 0) throw std::invalid_argument("paged_attention: heads must be a multiple of kv_heads");
  if (splits < 1 || (splits > 1 && workspace == nullptr)) throw std::invalid_argument("paged_attention: splits > 1 needs a workspace");
  if (batch.total_new_tokens == 0) return;
  AttentionParams params{};
  params.batch = batch;
  params.kv = kv;
  params.q = q;
  params.out = out;
  params.partial_out = workspace;
  params.partial_lse = workspace == nullptr ? nullptr
                                            : workspace + int64_t{splits} * batch.total_new_tokens * heads * kv.head_dim;
  params.heads = heads;
  params.ratio = heads / kv.kv_heads;
  params.tokens_per_tile = attention_tokens_per_tile(params.ratio, rows);
  params.query_tiles = attention_query_tiles(batch.max_new_tokens, params.ratio, rows);
  params.splits = splits;
  params.scale = scale;
#if defined(KVTIER_HOPPER_ATTENTION)
  if (kernel == AttentionKernel::kAuto && attention_uses_wgmma(kv.head_dim, heads, kv.kv_heads, kv.block_tokens, splits, rows)) {
    launch_hopper_attention(params, stream);
    return;
  }
#else
  (void)kernel;
#endif
  if (kv.head_dim == 64) {
    rows == 64 ? launch_attention<64, 64>(params, stream) : launch_attention<64, 128>(params, stream);
  } else {
    rows == 64 ? launch_attention<128, 64>(params, stream) : launch_attention<128, 128>(params, stream);
  }
  if (splits > 1) {
    combine_splits<<<batch.total_new_tokens * heads, 128, 0, stream>>>(params, kv.head_dim);
    KVTIER_GPU_CHECK_LAUNCH("combine_splits");
  }
}

}  // namespace kvtier::hw
