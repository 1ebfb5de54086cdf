// The Hopper paged attention kernel (attention_hopper.h), FlashAttention-3 style, for head_dim 128.
//
// A block owns one KV head and 128 query rows (the mapping of attention_plan.h: row = token * ratio + head
// in group) and walks the keys in tiles of 128. Its 384 threads form three warpgroups:
//   producer   (warpgroup 0, 40 registers a thread after setmaxnreg) copies the Q tile once (cp.async), then
//              its first warp brings K and V tiles from the pages into shared memory with the tensor-copy
//              engine, two stages deep: one cp.async.bulk.tensor per box of rows of one page (lane i issues
//              box i), completing on a "full" mbarrier (expect_tx), after waiting on an "empty" one (one
//              arrival per consumer warp); K runs a tile ahead of V, page ids two tiles ahead. Pools the
//              engine cannot address (hopper_tma_box_rows() == 0) are copied by the whole warpgroup with
//              16-byte cp.async copies signalling the full barrier by cp.async.mbarrier.arrive;
//   consumers  (warpgroups 1 and 2, 232 registers) each own 64 query rows. Per tile j a consumer issues
//              S_j = Q K_j^T (wgmma m64n128k16, both operands from shared memory) and O += P_{j-1} V_{j-1}
//              (P from registers, V read N-major), then computes the online softmax of S_j while the
//              tensor cores run those GEMMs, and releases K_j and V_{j-1} to the producer.
// The two consumers take turns issuing their GEMMs (named barriers 1 and 2), so that the tensor cores work
// on one consumer's GEMMs while the other does its softmax.
//
// Shared memory tiles (Q: 128 rows, K and V: 128 keys, of 128 bf16) are stored as two halves of 64 columns
// ([half][row][64]); each 128-byte row is 8 chunks of 16 bytes, chunk c of row r at c ^ (r % 8) inside
// 1024-byte-aligned groups of 8 rows: the 128-byte swizzle that wgmma matrix descriptors name.
#include "hw/model/attention_hopper.h"

#include <cuda.h>

#include <climits>
#include <cmath>
#include <stdexcept>
#include <string>

#include "hw/gpu/check.h"
#include "hw/gpu/device.h"

namespace kvtier::hw {
namespace {

constexpr int kD = kHopperAttentionHeadDim;
constexpr int kRows = kHopperAttentionRows;
constexpr int kKeys = kHopperAttentionKeys;
constexpr int kStages = 2;
constexpr int kThreads = 384;
constexpr int kProducerRegisters = 40, kConsumerRegisters = 232;
constexpr int kRowBytes = 128;                    // 64 bf16: one half of a row
constexpr int kQBytes = kRows * kD * 2;           // 32 KiB
constexpr int kTileBytes = kKeys * kD * 2;        // 32 KiB: K or V of one tile

struct Barriers {
  uint64_t q_full;
  uint64_t k_full[kStages], k_empty[kStages], v_full[kStages], v_empty[kStages];
};
constexpr int kSharedBytes = kQBytes + 2 * kStages * kTileBytes + static_cast<int>(sizeof(Barriers)) + 1024;  // + alignment

#if defined(__CUDA_ARCH__)

// Byte offset of 16-byte chunk `chunk` (0..15) of `row` in a swizzled tile of kTileRows rows.
template <int kTileRows>
__device__ inline uint32_t swizzled_offset(int row, int chunk) {
  return static_cast<uint32_t>((chunk / 8) * kTileRows * kRowBytes + row * kRowBytes + (((chunk % 8) ^ (row % 8)) << 4));
}

__device__ inline void copy_async_16(uint32_t dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0) : "memory");
}
// The barrier's arrival of this thread happens when all its earlier cp.async copies have landed.
__device__ inline void copy_async_arrive(uint32_t barrier) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(barrier) : "memory");
}
__device__ inline void barrier_init(uint32_t barrier, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(barrier), "r"(count) : "memory");
}
__device__ inline void barrier_arrive(uint32_t barrier) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(barrier) : "memory");
}
// Arrives on the barrier and adds `bytes` to the transaction count its phase waits for.
__device__ inline void barrier_arrive_expect_bytes(uint32_t barrier, int bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(barrier), "r"(bytes) : "memory");
}
// Like copy_async_arrive, but adds the arrival to the phase's expected count instead of taking one of them.
__device__ inline void copy_async_arrive_extra(uint32_t barrier) {
  asm volatile("cp.async.mbarrier.arrive.shared::cta.b64 [%0];\n" ::"r"(barrier) : "memory");
}
// Copies the box at coordinates (column, slot, head, K or V, page) of `map` to `dst`; its bytes complete a
// transaction of `barrier`. Coordinates past the tensor's extent read as zeros.
__device__ inline void tensor_copy(uint32_t dst, const CUtensorMap* map, int column, int slot, int head, int k_or_v,
                                   int page, uint32_t barrier) {
  asm volatile(
      "cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5, %6}], [%7];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(column), "r"(slot), "r"(head), "r"(k_or_v), "r"(page), "r"(barrier)
      : "memory");
}
// Waits until the phase of parity `parity` has completed (a fresh barrier counts parity 1 as completed).
__device__ inline void barrier_wait(uint32_t barrier, int parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "wait:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra wait;\n"
      "}\n" ::"r"(barrier),
      "r"(parity)
      : "memory");
}
// Orders the cp.async writes this thread has observed before its wgmma (async proxy) reads.
__device__ inline void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
// The consumers' turns on the tensor cores: consumer g waits on named barrier 1 + g for its turn and hands
// the turn over by arriving at the other one.
__device__ inline void wait_for_turn(int group) {
  if (group == 0) {
    asm volatile("bar.sync 1, 256;\n" ::: "memory");
  } else {
    asm volatile("bar.sync 2, 256;\n" ::: "memory");
  }
}
__device__ inline void hand_over_turn(int group) {
  if (group == 0) {
    asm volatile("bar.arrive 2, 256;\n" ::: "memory");
  } else {
    asm volatile("bar.arrive 1, 256;\n" ::: "memory");
  }
}

__device__ inline void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ inline void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int kPending>
__device__ inline void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
}
// Keeps the compiler from moving accesses of registers an in-flight wgmma owns across a fence or wait.
template <int N>
__device__ inline void pin(float (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
}

// Matrix descriptor of a 128-byte-swizzled operand at shared address `address`: `leading` and `stride`
// bytes as wgmma defines them for the operand's major-ness.
__device__ inline uint64_t descriptor(uint32_t address, uint32_t leading, uint32_t stride) {
  return static_cast<uint64_t>((address & 0x3FFFF) >> 4) | (static_cast<uint64_t>(leading >> 4) << 16) |
         (static_cast<uint64_t>(stride >> 4) << 32) | (1ull << 62);
}

// d (64 x 128) (+)= a (64 x 16, K-major) * b (16 x 128, K-major), both from shared memory.
__device__ inline void wgmma_ss(float (&d)[64], uint64_t a, uint64_t b, int accumulate) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, %64, %65, p, 1, 1, 0, 0;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
      "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
      "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
      "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
      "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
      "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
      "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
      "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(a), "l"(b), "r"(accumulate));
}

// d (64 x 128) += a (64 x 16, registers) * b (16 x 128, N-major in shared memory).
__device__ inline void wgmma_rs(float (&d)[64], const uint32_t* a, uint64_t b) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
      "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
      "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
      "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
      "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
      "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
      "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
      "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1));
}

__device__ inline float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

struct SharedTiles {
  uint32_t q, k, v;  // shared addresses: the Q tile, kStages K tiles, kStages V tiles
  Barriers* barriers;
};

__device__ inline uint32_t address_of(const uint64_t& barrier) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(&barrier));
}

// The ids of the pages that keys [n0, n0 + 128) fall in, one per lane: lane i of each producer warp holds
// page n0 / block_tokens + i (-1 past the key range). block_tokens >= 4 keeps them within 32 lanes.
__device__ inline int fetch_tile_pages(const AttentionParams& p, const BlockWork& w, const int* table, int n0) {
  const int page = n0 / p.kv.block_tokens + static_cast<int>(threadIdx.x) % 32;
  return page * p.kv.block_tokens < w.key_stop ? table[page] : -1;
}

// Copies rows n0 .. n0 + 127 of one (layer, K or V, head) from the pages into a swizzled tile, zero-filling
// keys at or past key_stop; `tile_pages` from fetch_tile_pages(n0). Thread t copies chunk t % 16 of rows
// t / 16 + 8 i. `page_shift`: log2 of block_tokens when it is a power of two (the usual case: shifts
// instead of divisions keep the producer's instruction count low), else -1.
__device__ inline void load_kv_tile(const AttentionParams& p, const BlockWork& w, int tile_pages,
                                    const uint16_t* head_base, int page_shift, int n0, uint32_t tile) {
  const int chunk = static_cast<int>(threadIdx.x) % 16, row0 = static_cast<int>(threadIdx.x) / 16;
  const int slot_mask = (1 << max(page_shift, 0)) - 1;
  const int first_page = n0 / p.kv.block_tokens;
#pragma unroll
  for (int pass = 0; pass < kKeys / 8; ++pass) {
    const int row = row0 + 8 * pass, key = n0 + row;
    const int page_index = page_shift >= 0 ? key >> page_shift : key / p.kv.block_tokens;
    const int slot = page_shift >= 0 ? key & slot_mask : key % p.kv.block_tokens;
    const int page = __shfl_sync(0xffffffffu, tile_pages, (page_index - first_page) & 31);
    const bool valid = key < w.key_stop;
    const uint16_t* src = valid ? head_base + page * p.kv.page_stride + slot * kD : p.kv.pool;
    copy_async_16(tile + swizzled_offset<kKeys>(row, chunk), src, valid);
  }
}

// Brings rows n0 .. n0 + 127 of (K or V, head) into a swizzled tile with the tensor-copy engine, lane i of
// the calling warp copying box i (rows i % groups, column half i / groups) of one page, and makes the tile
// complete `full`. Boxes past key_stop read as zeros (a slot past the page). The box that key_stop cuts
// (the block's last tile only) is copied instead row by row with cp.async, zero-filling the rows past
// key_stop: V rows there meet zero weights, and stale rows of a page could hold NaNs.
__device__ inline void load_kv_tile_tma(const AttentionParams& p, const BlockWork& w, const CUtensorMap* map, int box_rows,
                                        int tile_pages, int k_or_v, int n0, uint32_t tile, uint32_t full) {
  const int lane = static_cast<int>(threadIdx.x) % 32, kv_head = static_cast<int>(blockIdx.x);
  const int block_tokens = p.kv.block_tokens, first_page = n0 / block_tokens, groups = kKeys / box_rows;
  const int group = lane % groups, key = n0 + group * box_rows;
  const int page = __shfl_sync(0xffffffffu, tile_pages, (key / block_tokens - first_page) & 31);
  const int valid_rows = w.key_stop - n0;
  const int cut_group = valid_rows < kKeys && valid_rows % box_rows != 0 ? valid_rows / box_rows : -1;
  if (cut_group >= 0) {
    const int cut_key = n0 + cut_group * box_rows;
    const int cut_page = __shfl_sync(0xffffffffu, tile_pages, (cut_key / block_tokens - first_page) & 31);
    const uint16_t* rows = p.kv.pool + cut_page * p.kv.page_stride + p.kv.k_offset + k_or_v * p.kv.v_offset +
                           kv_head * p.kv.head_stride + (cut_key % block_tokens) * kD;
#pragma unroll 1
    for (int i = lane; i < box_rows * 16; i += 32) {
      const int row = i / 16, chunk = i % 16;
      const bool valid = cut_key + row < w.key_stop;
      copy_async_16(tile + swizzled_offset<kKeys>(cut_group * box_rows + row, chunk), valid ? rows + row * kD + chunk * 8 : p.kv.pool,
                    valid);
    }
    copy_async_arrive_extra(full);
  }
  __syncwarp();
  if (lane == 0) barrier_arrive_expect_bytes(full, kTileBytes - (cut_group >= 0 ? box_rows * kD * 2 : 0));
  if (lane < 2 * groups && group != cut_group) {
    const int half = lane / groups;
    const bool valid = key < w.key_stop;
    tensor_copy(tile + half * kKeys * kRowBytes + group * box_rows * kRowBytes, map, half * 64,
                valid ? key % block_tokens : block_tokens, kv_head, k_or_v, valid ? page : 0, full);
  }
}

// The K/V stream of the tensor-copy engine: as produce()'s cp.async one, from one warp.
__device__ void produce_tma(const AttentionParams& p, const BlockWork& w, int tiles, const SharedTiles& s,
                            const CUtensorMap* map, int box_rows) {
  const int* table = p.batch.block_table + int64_t{w.seq} * p.batch.block_table_stride;
  auto n0_of = [&](int j) { return w.key_begin + j * kKeys; };
  auto load_k = [&](int j, int tile_pages) {
    const int stage = j % kStages;
    barrier_wait(address_of(s.barriers->k_empty[stage]), ((j / kStages) & 1) ^ 1);
    load_kv_tile_tma(p, w, map, box_rows, tile_pages, 0, n0_of(j), s.k + stage * kTileBytes,
                     address_of(s.barriers->k_full[stage]));
  };
  int pages = fetch_tile_pages(p, w, table, n0_of(0));
  int next_pages = tiles > 1 ? fetch_tile_pages(p, w, table, n0_of(1)) : -1;
  load_k(0, pages);
  for (int j = 0; j < tiles; ++j) {
    const int later_pages = j + 2 < tiles ? fetch_tile_pages(p, w, table, n0_of(j + 2)) : -1;
    if (j + 1 < tiles) load_k(j + 1, next_pages);
    const int stage = j % kStages;
    barrier_wait(address_of(s.barriers->v_empty[stage]), ((j / kStages) & 1) ^ 1);
    load_kv_tile_tma(p, w, map, box_rows, pages, 1, n0_of(j), s.v + stage * kTileBytes,
                     address_of(s.barriers->v_full[stage]));
    pages = next_pages;
    next_pages = later_pages;
  }
  asm volatile("cp.async.wait_all;\n" ::: "memory");
}

__device__ void produce(const AttentionParams& p, const BlockWork& w, int tiles, const SharedTiles& s,
                        const CUtensorMap* map, int box_rows) {
  const int kv_head = static_cast<int>(blockIdx.x);
  const int chunk = static_cast<int>(threadIdx.x) % 16, row0 = static_cast<int>(threadIdx.x) / 16;
#pragma unroll 4
  for (int pass = 0; pass < kRows / 8; ++pass) {
    const int row = row0 + 8 * pass, token = row / p.ratio;
    const bool valid = token < w.tile_tokens && row < p.tokens_per_tile * p.ratio;
    const uint16_t* src = p.q;
    if (valid) {
      src = p.q + ((int64_t{w.q0} + w.tok0 + token) * p.heads + kv_head * p.ratio + row % p.ratio) * kD + chunk * 8;
    }
    copy_async_16(s.q + swizzled_offset<kRows>(row, chunk), src, valid);
  }
  copy_async_arrive(address_of(s.barriers->q_full));
  if (box_rows > 0) {
    if (threadIdx.x < 32) produce_tma(p, w, tiles, s, map, box_rows);
    asm volatile("cp.async.wait_all;\n" ::: "memory");
    return;
  }
  const int* table = p.batch.block_table + int64_t{w.seq} * p.batch.block_table_stride;
  const uint16_t* k_base = p.kv.pool + p.kv.k_offset + kv_head * p.kv.head_stride + chunk * 8;
  const int page_shift = (p.kv.block_tokens & (p.kv.block_tokens - 1)) == 0 ? __ffs(p.kv.block_tokens) - 1 : -1;
  auto n0_of = [&](int j) { return w.key_begin + j * kKeys; };
  // K runs a tile ahead of V (K_0, K_1, V_0, K_2, V_1, ...): S_{j+1} needs K_{j+1} when P_j V_j needs V_j.
  // Page ids are read from the block table two tiles ahead, off the copies' critical path.
  auto load_k = [&](int j, int tile_pages) {
    const int stage = j % kStages;
    barrier_wait(address_of(s.barriers->k_empty[stage]), ((j / kStages) & 1) ^ 1);
    load_kv_tile(p, w, tile_pages, k_base, page_shift, n0_of(j), s.k + stage * kTileBytes);
    copy_async_arrive(address_of(s.barriers->k_full[stage]));
  };
  int pages = fetch_tile_pages(p, w, table, n0_of(0));
  int next_pages = tiles > 1 ? fetch_tile_pages(p, w, table, n0_of(1)) : -1;
  load_k(0, pages);
  for (int j = 0; j < tiles; ++j) {
    const int later_pages = j + 2 < tiles ? fetch_tile_pages(p, w, table, n0_of(j + 2)) : -1;
    if (j + 1 < tiles) load_k(j + 1, next_pages);
    const int stage = j % kStages;
    barrier_wait(address_of(s.barriers->v_empty[stage]), ((j / kStages) & 1) ^ 1);
    load_kv_tile(p, w, pages, k_base + p.kv.v_offset, page_shift, n0_of(j), s.v + stage * kTileBytes);
    copy_async_arrive(address_of(s.barriers->v_full[stage]));
    pages = next_pages;
    next_pages = later_pages;
  }
  asm volatile("cp.async.wait_all;\n" ::: "memory");
}

// Online softmax of one tile of scores in place (s becomes P, unnormalised): masks keys at or past each
// row's limit, updates the row maxima and sums, and returns the factor the output so far must be scaled by.
__device__ inline void online_softmax(float (&s)[64], int n0, const int (&key_limit)[2], float scale_log2,
                                      float (&row_max)[2], float (&row_sum)[2], float (&alpha)[2]) {
  const int quad_col = static_cast<int>(threadIdx.x) % 4;
  const bool needs_mask = n0 + kKeys > min(key_limit[0], key_limit[1]);
  float tile_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
  for (int i = 0; i < 64; ++i) {
    if (needs_mask && n0 + (i / 4) * 8 + 2 * quad_col + (i & 1) >= key_limit[(i / 2) % 2]) s[i] = -INFINITY;
    tile_max[(i / 2) % 2] = fmaxf(tile_max[(i / 2) % 2], s[i]);
  }
  float scaled_max[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    tile_max[r] = fmaxf(tile_max[r], gpu::shfl_xor(tile_max[r], 1, 32));
    tile_max[r] = fmaxf(tile_max[r], gpu::shfl_xor(tile_max[r], 2, 32));
    const float new_max = fmaxf(row_max[r], tile_max[r]);
    scaled_max[r] = new_max == -INFINITY ? 0.0f : new_max * scale_log2;
    alpha[r] = fast_exp2(row_max[r] * scale_log2 - scaled_max[r]);
    row_max[r] = new_max;
    row_sum[r] *= alpha[r];
  }
#pragma unroll
  for (int i = 0; i < 64; ++i) {
    s[i] = fast_exp2(s[i] * scale_log2 - scaled_max[(i / 2) % 2]);
    row_sum[(i / 2) % 2] += s[i];
  }
}

__device__ void consume(const AttentionParams& p, const BlockWork& w, int tiles, const SharedTiles& sh) {
  const int group = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x) / 128 - 1, 0);  // consumer 0 or 1, warp-uniform
  const int warp = static_cast<int>(threadIdx.x) % 128 / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int kv_head = static_cast<int>(blockIdx.x);
  // This thread's two rows (of the block's 128) and their causal key limits.
  int row[2], key_limit[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    row[r] = group * 64 + warp * 16 + lane / 4 + 8 * r;
    key_limit[r] = min(w.key_stop, w.context + w.tok0 + row[r] / p.ratio + 1);
  }
  const float scale_log2 = p.scale * 1.4426950408889634f;
  float o[64], s[64];
  uint32_t pf[32];
#pragma unroll
  for (int i = 0; i < 64; ++i) o[i] = s[i] = 0.0f;
  float row_max[2] = {-INFINITY, -INFINITY}, row_sum[2] = {0.0f, 0.0f}, alpha[2] = {1.0f, 1.0f};
  const uint32_t q_rows = sh.q + group * 64 * kRowBytes;
  Barriers& b = *sh.barriers;
  // S = Q K^T of the K tile in `stage`, as one wgmma group.
  auto issue_scores = [&](int stage) {
    pin(s);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kD / 16; ++kk) {
      const uint32_t column = (kk % 4) * 32;
      wgmma_ss(s, descriptor(q_rows + (kk / 4) * kRows * kRowBytes + column, 16, 1024),
               descriptor(sh.k + stage * kTileBytes + (kk / 4) * kKeys * kRowBytes + column, 16, 1024), kk > 0);
    }
    wgmma_commit();
  };
  // O = alpha O + P V of the V tile in `stage`, as one wgmma group.
  auto issue_output = [&](int stage) {
#pragma unroll
    for (int i = 0; i < 64; ++i) o[i] *= alpha[(i / 2) % 2];
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kKeys / 16; ++kk) {
      wgmma_rs(o, pf + 4 * kk, descriptor(sh.v + stage * kTileBytes + kk * 16 * kRowBytes, kKeys * kRowBytes, 1024));
    }
    wgmma_commit();
  };
  // One arrival per warp: its wgmma reads are complete once the warp's wait returns.
  auto release = [&](uint64_t& barrier) {
    if (lane == 0) barrier_arrive(address_of(barrier));
  };
  auto to_operand = [&] {
#pragma unroll
    for (int i = 0; i < 32; ++i) pf[i] = gpu::pack_bf16x2_rn(s[2 * i], s[2 * i + 1]);
  };
  barrier_wait(address_of(b.q_full), 0);
  if (group == 1) hand_over_turn(group);  // consumer 0 issues first
  barrier_wait(address_of(b.k_full[0]), 0);
  fence_proxy_async();
  wait_for_turn(group);
  issue_scores(0);
  hand_over_turn(group);
  wgmma_wait<0>();
  pin(s);
  release(b.k_empty[0]);
  online_softmax(s, w.key_begin, key_limit, scale_log2, row_max, row_sum, alpha);
  to_operand();
  // Turn j: S_j and P_{j-1} V_{j-1} on the tensor cores while this consumer waits, then the softmax of S_j
  // overlaps P_{j-1} V_{j-1} (and the other consumer's GEMMs).
  for (int j = 1; j < tiles; ++j) {
    const int stage = j % kStages, previous = (j - 1) % kStages;
    barrier_wait(address_of(b.k_full[stage]), (j / kStages) & 1);
    barrier_wait(address_of(b.v_full[previous]), ((j - 1) / kStages) & 1);
    fence_proxy_async();
    wait_for_turn(group);
    issue_scores(stage);
    issue_output(previous);
    hand_over_turn(group);
    wgmma_wait<1>();
    pin(s);
    release(b.k_empty[stage]);
    online_softmax(s, w.key_begin + j * kKeys, key_limit, scale_log2, row_max, row_sum, alpha);
    wgmma_wait<0>();
    pin(o);
    release(b.v_empty[previous]);
    to_operand();
  }
  const int last = (tiles - 1) % kStages;
  barrier_wait(address_of(b.v_full[last]), ((tiles - 1) / kStages) & 1);
  fence_proxy_async();
  wait_for_turn(group);
  issue_output(last);
  if (group == 0) hand_over_turn(group);  // consumer 1's last turn is the last one
  wgmma_wait<0>();
  pin(o);
  const int quad_col = lane % 4;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    row_sum[r] += gpu::shfl_xor(row_sum[r], 1, 32);
    row_sum[r] += gpu::shfl_xor(row_sum[r], 2, 32);
    const int token = row[r] / p.ratio;
    if (token >= w.tile_tokens || row[r] >= p.tokens_per_tile * p.ratio) continue;
    const int head = kv_head * p.ratio + row[r] % p.ratio;
    const float inverse = row_sum[r] > 0 ? 1.0f / row_sum[r] : 0.0f;
    uint16_t* dst = p.out + ((int64_t{w.q0} + w.tok0 + token) * p.heads + head) * kD + 2 * quad_col;
#pragma unroll
    for (int n = 0; n < kD / 8; ++n) {
      *reinterpret_cast<uint32_t*>(dst + n * 8) = gpu::pack_bf16x2_rn(o[4 * n + 2 * r] * inverse, o[4 * n + 2 * r + 1] * inverse);
    }
  }
}

#endif  // __CUDA_ARCH__

// `kv_map`: the pool as a tensor for boxes of `box_rows` (hopper_tma_box_rows), unused when that is 0.
__global__ void __launch_bounds__(kThreads, 1)
    paged_attention_hopper(AttentionParams p, const __grid_constant__ CUtensorMap kv_map, int box_rows) {
#if defined(__CUDA_ARCH__)
  extern __shared__ uint8_t shared_raw[];
  const uint32_t raw = static_cast<uint32_t>(__cvta_generic_to_shared(shared_raw));
  const uint32_t base = (raw + 1023) & ~1023u;  // swizzle atoms are 1024-byte aligned
  SharedTiles tiles_at{base, base + kQBytes, base + kQBytes + kStages * kTileBytes,
                       reinterpret_cast<Barriers*>(shared_raw + (base - raw) + kQBytes + 2 * kStages * kTileBytes)};
  BlockWork w;
  if (!block_work(p, p.query_tiles - 1 - static_cast<int>(blockIdx.y), w)) return;
  const int tiles = (w.key_stop - w.key_begin + kKeys - 1) / kKeys;
  if (threadIdx.x == 0) {
    Barriers& b = *tiles_at.barriers;
    barrier_init(address_of(b.q_full), 128);
    const int full_arrivals = box_rows > 0 ? 1 : 128;  // the expect_tx arrival, or every producer thread's
    for (int i = 0; i < kStages; ++i) {
      barrier_init(address_of(b.k_full[i]), full_arrivals);
      barrier_init(address_of(b.v_full[i]), full_arrivals);
      barrier_init(address_of(b.k_empty[i]), 8);  // one arrival per consumer warp
      barrier_init(address_of(b.v_empty[i]), 8);
    }
  }
  __syncthreads();
  if (__shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x) / 128, 0) == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kProducerRegisters));
    produce(p, w, tiles, tiles_at, &kv_map, box_rows);
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kConsumerRegisters));
    consume(p, w, tiles, tiles_at);
  }
#endif
}

}  // namespace

bool hopper_attention_device() {
  int device = 0, major = 0, minor = 0;
  KVTIER_GPU_CHECK(cudaGetDevice(&device));
  KVTIER_GPU_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  KVTIER_GPU_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  return major == 9 && minor == 0;
}

namespace {

using EncodeTiled = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                 const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                 CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

// cuTensorMapEncodeTiled from the driver the runtime loaded (no link dependency on libcuda).
EncodeTiled encode_tiled() {
  static const EncodeTiled encode = [] {
    void* function = nullptr;
    cudaDriverEntryPointQueryResult found{};
    KVTIER_GPU_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &function, 12000, cudaEnableDefault, &found));
    if (found != cudaDriverEntryPointSuccess) throw std::runtime_error("the CUDA driver has no cuTensorMapEncodeTiled");
    return reinterpret_cast<EncodeTiled>(function);
  }();
  return encode;
}

// One layer of the pool as a 5-D bf16 tensor [page][K or V][kv head][slot][head_dim] (innermost last),
// read in boxes of 64 columns x box_rows slots with the 128-byte swizzle of the kernel's tiles. The page
// extent is left open (the block table names the pages); slots past block_tokens read as zeros.
CUtensorMap kv_tensor_map(const PagedKvLayer& kv, int box_rows) {
  constexpr cuuint64_t kBf16 = 2;
  const cuuint64_t extent[5] = {static_cast<cuuint64_t>(kv.head_dim), static_cast<cuuint64_t>(kv.block_tokens),
                                static_cast<cuuint64_t>(kv.kv_heads), 2, static_cast<cuuint64_t>(INT_MAX)};
  const cuuint64_t stride_bytes[4] = {kv.head_dim * kBf16, kv.head_stride * kBf16, kv.v_offset * kBf16,
                                      kv.page_stride * kBf16};
  const cuuint32_t box[5] = {kRowBytes / 2, static_cast<cuuint32_t>(box_rows), 1, 1, 1};
  const cuuint32_t element_strides[5] = {1, 1, 1, 1, 1};
  CUtensorMap map{};
  const CUresult result = encode_tiled()(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 5, kv.pool + kv.k_offset, extent,
                                         stride_bytes, box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                         CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                         CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (result != CUDA_SUCCESS) {
    throw std::runtime_error("cuTensorMapEncodeTiled failed (" + std::to_string(static_cast<int>(result)) + ") for the K/V pool");
  }
  return map;
}

void allow_hopper_shared_memory() {
  static const bool configured = [] {
    KVTIER_GPU_CHECK(cudaFuncSetAttribute(reinterpret_cast<const void*>(&paged_attention_hopper),
                                          cudaFuncAttributeMaxDynamicSharedMemorySize, kSharedBytes));
    return true;
  }();
  (void)configured;
}

}  // namespace

int hopper_attention_blocks_per_multiprocessor() {
  allow_hopper_shared_memory();
  int blocks = 0;
  KVTIER_GPU_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &blocks, reinterpret_cast<const void*>(&paged_attention_hopper), kThreads, kSharedBytes));
  return blocks;
}

void launch_hopper_attention(const AttentionParams& params, gpuStream_t stream) {
  allow_hopper_shared_memory();
  const dim3 grid(params.kv.kv_heads, params.query_tiles, params.batch.sequences);
  const int box_rows = hopper_tma_box_rows(params.kv);
  const CUtensorMap kv_map = box_rows > 0 ? kv_tensor_map(params.kv, box_rows) : CUtensorMap{};
  paged_attention_hopper<<<grid, kThreads, kSharedBytes, stream>>>(params, kv_map, box_rows);
  KVTIER_GPU_CHECK_LAUNCH("paged_attention_hopper");
}

}  // namespace kvtier::hw
