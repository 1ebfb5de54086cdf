// 4-bit quantize/dequantize kernels: TurboQuant slots and group-scaled int4.
//
// These kernels move 1.5-2 bytes per element and must run at HBM speed, so each lane works on a run of
// elements in registers and cross-lane traffic is kept to the minimum the formats' operation order allows.
//
// TurboQuant quantize: a team of L = head_dim / E lanes per vector (E = 32 consecutive elements per
// lane; head_dim 32 takes one lane, 512 sixteen), teams stride over the vectors. The format sums the
// norm's squares in runs of 16 elements followed by a butterfly (turboquant.h): a lane's two runs, then
// log2(L) shuffle stages and one in registers. The Walsh-Hadamard stages below E run in registers, the
// log2(L) longer ones through shuffles. A codebook cell is found with one 4-byte shared-memory
// lookup keyed by the top 11 bits of the float (sign, exponent, two mantissa bits) and an add (cell_entry),
// which equals the reference's binary search whenever no bucket holds two boundaries (checked on the host
// once per codebook; otherwise the launch takes the kernel that runs the search).
//
// TurboQuant dequantize: 32 elements per lane in interleaved 8-element chunks (DequantizeLayout), so
// that the transform needs few shuffles while the lanes' 16-byte stores stay contiguous.
//
// int4 quantize: a lane handles min(g, 32) consecutive elements (one to four 16-byte loads), g / 32
// lanes share a larger group and combine their min/max through shuffles. int4 dequantize: 8 elements
// per lane (a lane writing 64 contiguous bytes leaves every store instruction half-filling 32 sectors:
// 30 % slower on the H200), several chunks per lane in flight.
//
// A value of bf16 is rounded without the NaN case when the stored scale and zero (or norm and codebook)
// are finite, which rules NaN out.
//
// Loops run the same number of rounds on every thread of a block so that shuffles (full mask on CUDA)
// always see all their partners; lanes past the end compute on a clamped index and store nothing. The
// trip count depends only on blockIdx and gridDim, so the compiler knows it is uniform: counted per
// warp (threadIdx.x / 32), it was not, and every shuffle came wrapped in convergence code (WARPSYNC,
// a quarter of the TurboQuant dequantize kernel's instructions). Nothing depends on the hardware warp
// width: teams have at most 32 lanes, HIP's 64-lane wavefronts just hold two such warps.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "hw/kernels/cell_table.h"
#include "hw/gpu/check.h"
#include "hw/gpu/device.h"
#include "hw/kernels/kernels_gpu.h"
#include "hw/kernels/quant_math.h"

namespace kvtier::hw {
namespace {

constexpr int kThreads = 256;
constexpr int kWarp = 32;  // the widest team of lanes that exchange values, not the hardware width
constexpr int kDequantizeElements = 8;  // per lane in the int4 dequantize kernel

// The quantize lanes' layout: 32 consecutive elements per lane, D / 32 lanes per vector (1 to 16 for head_dim
// 32 to 512). Instruction issue is one of the kernel's two busiest units (the L1/shared-memory data pipe the
// other), and every lane of a team repeats the per-vector scalar work (square root, reciprocals, conversions,
// store setup): at 16 elements per lane each element carried twice as much of it, and the transform and the
// norm one more shuffle stage each (H200: 2.82 TiB/s against 2.94 at 32).
template <int D>
struct QuantizeLayout {
  static constexpr int kElements = 32;          // per lane: two of the norm's runs
  static constexpr int kLanes = D / kElements;  // per vector
  static_assert(kLanes >= 1 && kLanes <= kWarp, "a team of lanes fits in a warp");
};

// Loads W 32-bit words (W a multiple of 4) from 16-byte aligned `src`, global or shared, in 16-byte loads.
template <int W>
__device__ void load_words(const void* src, uint32_t* words) {
#pragma unroll
  for (int i = 0; i < W / 4; ++i) {
    const uint4 word = reinterpret_cast<const uint4*>(src)[i];
    words[4 * i] = word.x;
    words[4 * i + 1] = word.y;
    words[4 * i + 2] = word.z;
    words[4 * i + 3] = word.w;
  }
}

// Word j holds elements 2j (low half) and 2j+1; `flip` XORs their sign bits (bits 15 and 31).
template <int N>
__device__ void unpack_bf16(const uint32_t* words, const uint32_t* flip, float* out) {
#pragma unroll
  for (int j = 0; j < N / 2; ++j) {
    uint32_t w = words[j] ^ flip[j];
    out[2 * j] = bits_float(w << 16);
    out[2 * j + 1] = bits_float(w & 0xffff0000u);
  }
}

// Two floats as one word of bf16 (lo in the low half) XOR `flip`; `finite` says neither can be NaN.
__device__ uint32_t pack_bf16(float lo, float hi, bool finite, uint32_t flip) {
  if (finite) return gpu::pack_bf16x2_rn(lo, hi) ^ flip;
  return (float_to_bf16(lo) | (static_cast<uint32_t>(float_to_bf16(hi)) << 16)) ^ flip;
}

// float_to_fp16 (quant_math.h) in a few instructions: a value that is not NaN saturates at +-65504 by
// clamping and is then rounded by the hardware conversion, as the software one rounds.
__device__ uint16_t fp16_saturated(float f) {
  if (f != f) return 0x7e00u;
  return gpu::fp16_bits_rn(fminf(fmaxf(f, -65504.0f), 65504.0f));
}

template <int N>
__device__ void store_bf16(const float* in, bool finite, const uint32_t* flip, uint16_t* dst) {
#pragma unroll
  for (int w = 0; w < N / 8; ++w) {
    uint32_t p[4];
#pragma unroll
    for (int j = 0; j < 4; ++j)
      p[j] = pack_bf16(in[8 * w + 2 * j], in[8 * w + 2 * j + 1], finite, flip[4 * w + j]);
    reinterpret_cast<uint4*>(dst)[w] = make_uint4(p[0], p[1], p[2], p[3]);
  }
}

// Nibble of a min/max-quantized value; the same as affine_nibble (quant_math.h), with the saturating
// conversion doing the clamp at 0 and the NaN case.
__device__ uint32_t affine_nibble_fast(float x, float zero, float inverse) {
  return min(__float2uint_rz(affine_position(x, zero, inverse)), 15u);
}

// Eight values below 16 as one word, the first in the low nibble, by a tree of shift-and-adds (one
// instruction each, LEA): 7 instructions where OR-ing in each shifted value took 16.
__device__ uint32_t pack_nibbles(const uint32_t* n) {
  const uint32_t b0 = n[0] + (n[1] << 4), b1 = n[2] + (n[3] << 4), b2 = n[4] + (n[5] << 4),
                 b3 = n[6] + (n[7] << 4);
  return (b0 + (b1 << 8)) + ((b2 + (b3 << 8)) << 16);
}

// A nibble's value as a float without a conversion instruction: 2^23 + n has n in its low mantissa bits.
__device__ float nibble_float(uint32_t nibble) {
  return bits_float(0x4b000000u | nibble) - 8388608.0f;  // exact for n < 2^23
}

// Writes `bytes` (a multiple of 2) of `words` to `dst`: 8-byte stores when `wide` (dst 8-byte aligned),
// otherwise byte stores.
template <int Bytes>
__device__ void store_run(const uint32_t* words, uint8_t* dst, bool wide) {
  if (wide) {
#pragma unroll
    for (int i = 0; i < Bytes / 8; ++i)
      reinterpret_cast<uint2*>(dst)[i] = make_uint2(words[2 * i], words[2 * i + 1]);
    if constexpr (Bytes % 8 == 4) reinterpret_cast<uint32_t*>(dst)[Bytes / 4 - 1] = words[Bytes / 4 - 1];
  } else {
#pragma unroll
    for (int i = 0; i < Bytes; ++i) dst[i] = static_cast<uint8_t>(words[i / 4] >> (8 * (i % 4)));
  }
}

template <int Bytes>
__device__ void load_run(const uint8_t* src, uint32_t* words, bool wide) {
  if (wide) {
#pragma unroll
    for (int i = 0; i < Bytes / 8; ++i) {
      uint2 w = reinterpret_cast<const uint2*>(src)[i];
      words[2 * i] = w.x;
      words[2 * i + 1] = w.y;
    }
    if constexpr (Bytes % 8 == 4)
      words[Bytes / 4 - 1] = reinterpret_cast<const uint32_t*>(src)[Bytes / 4 - 1];
  } else {
#pragma unroll
    for (int i = 0; i < (Bytes + 3) / 4; ++i) words[i] = 0;
#pragma unroll
    for (int i = 0; i < Bytes; ++i) words[i / 4] |= static_cast<uint32_t>(src[i]) << (8 * (i % 4));
  }
}

template <int Bytes>
__device__ void load_run_u16(const uint8_t* src, uint32_t* words, bool wide) {
  if (wide) {
#pragma unroll
    for (int i = 0; i < Bytes / 4; ++i) {
      const uint16_t* half = reinterpret_cast<const uint16_t*>(src) + 2 * i;
      words[i] = half[0] | (static_cast<uint32_t>(half[1]) << 16);
    }
  } else {
    load_run<Bytes>(src, words, false);
  }
}

__device__ void store_fp16_bytes(uint8_t* at, uint16_t h) {
  at[0] = static_cast<uint8_t>(h & 0xff);
  at[1] = static_cast<uint8_t>(h >> 8);
}

__device__ uint16_t load_fp16(const uint8_t* at, bool wide) {
  if (wide) return *reinterpret_cast<const uint16_t*>(at);
  return static_cast<uint16_t>(at[0] | (at[1] << 8));
}

// cell_table_matches_search (cell_table.h) for the last codebook seen, decided on the host so that the
// kernel's choice is a template argument: branching on a value computed in the kernel put every shuffle of
// the quantize loop inside convergence code (WARPSYNC), as the compiler cannot tell that the value is the
// same in every lane.
bool cell_table_is_exact(const TurboQuantCodebook& book) {
  thread_local TurboQuantCodebook last_book{};
  thread_local bool last_exact = false, known = false;
  if (known && std::memcmp(&last_book, &book, sizeof book) == 0) return last_exact;
  last_book = book;
  last_exact = cell_table_matches_search(book);
  known = true;
  return last_exact;
}

// Fills the cell table of `book` (all threads of the block).
__device__ void build_cell_table(const TurboQuantCodebook& book, uint32_t* table) {
  for (uint32_t key = threadIdx.x; key < kCellBuckets; key += blockDim.x) table[key] = cell_entry(book, key);
}

// kUseTable is a template argument so that the choice is made once per kernel, not per element.
template <bool kUseTable>
__device__ uint32_t cell_index(float z, const uint32_t* table, const float* boundaries) {
  if constexpr (!kUseTable) {
    return codebook_index(boundaries, z);
  } else {
    return cell_table_lookup(table, z);
  }
}

// Sign-bit masks of the rotation signs of a whole vector, in the word layout of unpack_bf16 (word j:
// elements 2j and 2j + 1), built by the block once; with kRunWords > 0, kFlipPad words of padding follow
// every kRunWords (one quantize lane's). Lanes read theirs from shared memory for every vector: kept in
// registers, the compiler rematerialised the hash of every sign inside the loop (about 11 integer
// instructions per element, a fifth of the quantize kernel).
constexpr int kFlipPad = 4;
template <int D, int kRunWords = 0>
__device__ void build_rotation_flips(uint32_t seed, uint32_t* flips) {
  for (int j = threadIdx.x; j < D / 2; j += blockDim.x) {
    constexpr int kRun = kRunWords > 0 ? kRunWords : 1;  // hipcc warns of j / 0 even where unused
    flips[kRunWords > 0 ? j + j / kRun * kFlipPad : j] =
        (rotation_sign(seed, 2 * j) < 0.0f ? 0x8000u : 0u) |
        (rotation_sign(seed, 2 * j + 1) < 0.0f ? 0x80000000u : 0u);
  }
}

// The squared norm in the format's order (turboquant.h): this lane's R = E / 16 runs, then the butterfly
// over the team's R * L runs; a distance of R or more pairs runs of lanes (distance / R) apart, a smaller
// one this lane's own runs.
template <int E, int L>
__device__ float ordered_sum_of_squares(const float* x) {
  constexpr int R = E / kTurboQuantNormRun;
  float sum[R];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const float* run = x + r * kTurboQuantNormRun;
    sum[r] = run[0] * run[0];  // fma(x, x, 0) == x * x
#pragma unroll
    for (int e = 1; e < kTurboQuantNormRun; ++e) sum[r] = fused_multiply_add(run[e], run[e], sum[r]);
  }
#pragma unroll
  for (int distance = R * L / 2; distance > 0; distance >>= 1) {
    float next[R];
#pragma unroll
    for (int r = 0; r < R; ++r)
      next[r] = distance >= R ? sum[r] + gpu::shfl_xor(sum[r], distance / R, L) : sum[r] + sum[r ^ distance];
#pragma unroll
    for (int r = 0; r < R; ++r) sum[r] = next[r];
  }
  return sum[0];
}

// The unnormalised Walsh-Hadamard transform of the team's vector: stages below E in registers, longer
// ones with lane (l XOR h / E). The upper lane of a pair computes partner - own as fma(own, -1, partner),
// one instruction and exactly partner + (-own), since own * -1 is exact.
template <int D, int E>
__device__ void walsh_hadamard(float* x, int lane) {
  constexpr int kLanes = D / E;
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
#pragma unroll
  for (int h = E; h < D; h <<= 1) {
    const int mask = h / E;
    const float sign = (lane & mask) != 0 ? -1.0f : 1.0f;
#pragma unroll
    for (int i = 0; i < E; ++i) {
      float partner = gpu::shfl_xor(x[i], mask, kLanes);
      x[i] = __fmaf_rn(x[i], sign, partner);
    }
  }
}

// The min and max of the N bf16 values in N/2 words, NaN skipped (+inf and -inf if all are NaN): the pairs
// compared two values per instruction, then the two halves as floats.
template <int N>
__device__ void min_max_bf16(const uint32_t* words, float& lo, float& hi) {
  uint32_t low = words[0], high = words[0];
#pragma unroll
  for (int j = 1; j < N / 2; ++j) {
    low = gpu::bf16x2_bound<false>(low, words[j]);
    high = gpu::bf16x2_bound<true>(high, words[j]);
  }
  lo = fminf(fminf(INFINITY, bits_float(low << 16)), bits_float(low & 0xffff0000u));
  hi = fmaxf(fmaxf(-INFINITY, bits_float(high << 16)), bits_float(high & 0xffff0000u));
}

// Min/max quantization of E values (scale and zero as the references round them) into E/8 words.
template <int E>
__device__ void affine_quantize(const float* x, float lo, float hi, uint16_t& scale_h, uint16_t& zero_h,
                                uint32_t* packed) {
  lo = canonical_zero(lo);
  hi = canonical_zero(hi);
  zero_h = fp16_saturated(lo);
  scale_h = fp16_saturated((hi - lo) / 15.0f);
  // A NaN scale converts to a NaN (fp16_bits_value is exact only for numbers), which inverse_scale maps
  // to 0 as the reference does.
  const float zero = gpu::fp16_bits_value(zero_h), inverse = inverse_scale(gpu::fp16_bits_value(scale_h));
#pragma unroll
  for (int w = 0; w < E / 8; ++w) {
    uint32_t nibbles[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) nibbles[i] = affine_nibble_fast(x[8 * w + i], zero, inverse);
    packed[w] = pack_nibbles(nibbles);
  }
}

// Values of E nibbles (E/8 words) under the stored fp16 scale and zero; `finite` when neither is inf/NaN
// (then no value is NaN).
template <int E>
__device__ bool affine_dequantize(const uint32_t* packed, uint16_t scale_h, uint16_t zero_h, float* x) {
  const bool finite = (scale_h & 0x7c00u) != 0x7c00u && (zero_h & 0x7c00u) != 0x7c00u;
  const float scale = finite ? gpu::fp16_bits_value(scale_h) : fp16_to_float(scale_h);
  const float zero = finite ? gpu::fp16_bits_value(zero_h) : fp16_to_float(zero_h);
#pragma unroll
  for (int i = 0; i < E; ++i)
    x[i] = fused_multiply_add(nibble_float((packed[i / 8] >> (4 * (i % 8))) & 0xfu), scale, zero);
  return finite;
}

// The first vector (or int4 chunk) of this block in round 0, and the step between rounds, for loops
// that every thread of a block runs the same number of times; thread t works on item first + t / lanes.
struct BlockRounds {
  int64_t first, step;
};
__device__ BlockRounds block_rounds(int lanes_per_item) {
  const int64_t items_per_block = kThreads / lanes_per_item;
  return {int64_t{blockIdx.x} * items_per_block, int64_t{gridDim.x} * items_per_block};
}

// The slot of an 8-byte aligned slot from its norm on, as 8-byte words. Lane l's W words of V data start
// two bytes into the word at D/2 + 4 W l, so it writes from there: `head` (the norm, or the previous lane's
// last two bytes of V data), then its own bytes but the last two; the last lane also writes the word at D
// (its last two bytes, scale, zero, two zero bytes) and any further padding. Writing the V bytes, norm,
// scale and zero in two-byte stores sent each L2 sector several partial writes (ncu: 7 of 32 bytes used
// per sector and store, L2 85 % busy at 55 % of DRAM bandwidth).
template <int D, int L, int W>
__device__ void store_slot_words(uint8_t* slot, int slot_bytes, int lane, uint32_t head,
                                 const uint32_t* v_packed, uint16_t scale_h, uint16_t zero_h) {
  static_assert(D % 16 == 0 && W % 2 == 0, "the norm and every lane's run start a word");
  uint32_t out[W];
  out[0] = head | v_packed[0] << 16;
#pragma unroll
  for (int i = 1; i < W; ++i) out[i] = v_packed[i - 1] >> 16 | v_packed[i] << 16;
  auto* words = reinterpret_cast<uint2*>(slot + D / 2) + lane * W / 2;
#pragma unroll
  for (int i = 0; i < W / 2; ++i) words[i] = make_uint2(out[2 * i], out[2 * i + 1]);
  if (lane != L - 1) return;
  *reinterpret_cast<uint2*>(slot + D) =
      make_uint2(v_packed[W - 1] >> 16 | static_cast<uint32_t>(scale_h) << 16, zero_h);
  for (int b = D + 8; b < slot_bytes; b += 8) *reinterpret_cast<uint2*>(slot + b) = make_uint2(0, 0);
}

// The quantize loop of one lane over its team's vectors, for a cell lookup chosen once per kernel.
template <int D, bool kUseTable>
__device__ void turboquant_quantize_vectors(const TurboQuantParams& params, const uint16_t* k,
                                            const uint16_t* v, uint8_t* slots, int64_t vectors,
                                            const uint32_t* cells, const float* boundaries,
                                            const uint32_t* flips) {
  constexpr int E = QuantizeLayout<D>::kElements, L = QuantizeLayout<D>::kLanes;
  const int lane = threadIdx.x % L;
  const uint32_t none[E / 2] = {};
  const bool wide = reinterpret_cast<uintptr_t>(slots) % 8 == 0 && params.slot_bytes % 8 == 0;
  const BlockRounds rounds = block_rounds(L);
  for (int64_t first = rounds.first; first < vectors; first += rounds.step) {
    const int64_t n = first + threadIdx.x / L;
    const bool active = n < vectors;
    const int64_t row = active ? n : vectors - 1;
    uint32_t k_words[E / 2], v_words[E / 2], flip[E / 2];
    load_words<E / 2>(k + row * D + lane * E, k_words);
    load_words<E / 2>(flips + lane * (E / 2 + kFlipPad), flip);
    float x[E];
    unpack_bf16<E>(k_words, flip, x);  // s * k: the signs do not change the squares
    const float norm = sqrtf(ordered_sum_of_squares<E, L>(x));
    walsh_hadamard<D, E>(x, lane);
    const float inverse_norm = norm > 0.0f ? 1.0f / norm : 0.0f;
    uint32_t k_packed[E / 8];
#pragma unroll
    for (int w = 0; w < E / 8; ++w) {
      uint32_t cell[8];
#pragma unroll
      for (int i = 0; i < 8; ++i)
        cell[i] = cell_index<kUseTable>(x[8 * w + i] * inverse_norm, cells, boundaries);
      k_packed[w] = pack_nibbles(cell);
    }

    // V is loaded only after the K work, not with K at the start of the round (H200: 3.09 TiB/s against
    // 3.03 with both loaded first).
    load_words<E / 2>(v + row * D + lane * E, v_words);
    unpack_bf16<E>(v_words, none, x);
    float lo, hi;
    min_max_bf16<E>(v_words, lo, hi);
    for (int distance = L / 2; distance > 0; distance >>= 1) {
      lo = fminf(lo, gpu::shfl_xor(lo, distance, L));
      hi = fmaxf(hi, gpu::shfl_xor(hi, distance, L));
    }
    uint16_t scale_h, zero_h;
    uint32_t v_packed[E / 8];
    affine_quantize<E>(x, lo, hi, scale_h, zero_h, v_packed);
    const uint16_t norm_h = fp16_saturated(norm);
    // The previous lane's last two bytes of V data.
    const uint32_t carried = gpu::shfl_up(v_packed[E / 8 - 1] >> 16, 1, L);
    // Stores only after the last shuffle: a shuffle after a branch on `active` came wrapped in
    // convergence code.
    if (!active) continue;
    uint8_t* slot = slots + row * params.slot_bytes;
    store_run<E / 2>(k_packed, slot + lane * E / 2, wide);
    if (wide) {
      store_slot_words<D, L, E / 8>(slot, params.slot_bytes, lane, lane == 0 ? norm_h : carried, v_packed,
                                    scale_h, zero_h);
      continue;
    }
    store_run<E / 2>(v_packed, slot + D / 2 + 2 + lane * E / 2, false);
    if (lane == 0) store_fp16_bytes(slot + D / 2, norm_h);
    if (lane == L - 1) {
      store_fp16_bytes(slot + D + 2, scale_h);
      store_fp16_bytes(slot + D + 4, zero_h);
      for (int b = D + 6; b < params.slot_bytes; ++b) slot[b] = 0;
    }
  }
}

// k, v: [vectors, D] bf16; slots: [vectors, slot_bytes]. kUseTable: cell_table_is_exact(codebook).
template <int D, bool kUseTable>
__global__ void __launch_bounds__(kThreads)
    turboquant_quantize_kernel(TurboQuantParams params, const uint16_t* k, const uint16_t* v, uint8_t* slots,
                               int64_t vectors) {
  __shared__ uint32_t cells[kUseTable ? kCellBuckets : 1];
  __shared__ float boundaries[kUseTable ? 1 : 15];  // for the search
  // Each lane's 16 words padded to 20, so that the 16-byte loads of the lanes of a team go to different
  // banks; unpadded, lanes l and l + 2 read the same ones (H200: 3.36 against 3.29 TiB/s, one device call).
  constexpr int kRunWords = QuantizeLayout<D>::kElements / 2;
  __shared__ __align__(16) uint32_t flips[D / 2 / kRunWords * (kRunWords + kFlipPad)];
  build_rotation_flips<D, kRunWords>(params.rotation_seed, flips);
  if constexpr (kUseTable) {
    build_cell_table(params.codebook, cells);
  } else if (threadIdx.x < 15) {
    boundaries[threadIdx.x] = params.codebook.boundaries[threadIdx.x];
  }
  __syncthreads();
  turboquant_quantize_vectors<D, kUseTable>(params, k, v, slots, vectors, cells, boundaries, flips);
}

// The dequantize lanes' layout: a vector is D / 8 chunks of 8 elements, and lane l of a team of L = D / 32
// holds chunks l, l + L, l + 2L, ... (J = 32 / 8 of them; all of a vector when D = 32). For each j the team's
// 16-byte stores are contiguous, so they coalesce as with 8 elements per lane, while the transform keeps
// 32 elements in registers: only log2(L) of its stages go through shuffles (two at D = 128, not four).
template <int D>
struct DequantizeLayout {
  static constexpr int kChunk = 8;
  static constexpr int kElements = 32;                // per lane (head_dim is at least 32)
  static constexpr int kChunks = kElements / kChunk;  // J
  static constexpr int kLanes = D / kElements;        // L
};

// The unnormalised Walsh-Hadamard transform in the DequantizeLayout, stage by stage in the reference's
// order: distances below 8 inside a chunk, 8 to 4L through shuffles with lane (l XOR h / 8), longer ones
// between a lane's chunks. The upper element of a pair gets partner - own, as fma(own, -1, partner).
template <int D>
__device__ void walsh_hadamard_interleaved(float* x, int lane) {
  using Layout = DequantizeLayout<D>;
  constexpr int E = Layout::kElements, C = Layout::kChunk, L = Layout::kLanes;
#pragma unroll
  for (int h = 1; h < D; h <<= 1) {
    if (h >= C && h < C * L) {
      const int mask = h / C;
      const float sign = (lane & mask) != 0 ? -1.0f : 1.0f;
#pragma unroll
      for (int i = 0; i < E; ++i) x[i] = __fmaf_rn(x[i], sign, gpu::shfl_xor(x[i], mask, L));
      continue;
    }
    const int step = h < C ? h : h / L;  // the register distance of element distance h
#pragma unroll
    for (int i = 0; i < E; ++i) {
      if ((i & step) == 0) {
        const float a = x[i], b = x[i + step];
        x[i] = a + b;
        x[i + step] = a - b;
      }
    }
  }
}

// kWide: slots and slot_bytes are 8-byte aligned, so fields load in 2- and 4-byte words. A template
// argument: decided in the kernel, the loads of both paths were issued in every round, one of them
// predicated off (H200: 3.12 TiB/s against 3.06).
template <int D, bool kWide>
__global__ void __launch_bounds__(kThreads)
    turboquant_dequantize_kernel(TurboQuantParams params, const uint8_t* slots, uint16_t* k, uint16_t* v,
                                 int64_t vectors) {
  using Layout = DequantizeLayout<D>;
  constexpr int E = Layout::kElements, C = Layout::kChunk, J = Layout::kChunks, L = Layout::kLanes;
  __shared__ float2 byte_centroids[256];  // the centroids of a byte's low and high nibble
  bool bounded = true;                    // every centroid finite and small: no product below overflows
  for (int i = 0; i < 16; ++i) bounded = bounded && fabsf(params.codebook.centroids[i]) <= 1e30f;
  for (int b = threadIdx.x; b < 256; b += blockDim.x)
    byte_centroids[b] = make_float2(params.codebook.centroids[b & 15], params.codebook.centroids[b >> 4]);
  __shared__ __align__(16) uint32_t flips[D / 2];
  build_rotation_flips<D>(params.rotation_seed, flips);
  __syncthreads();
  const int lane = threadIdx.x % L;
  const uint32_t none[C / 2] = {};
  const float inverse_d = 1.0f / static_cast<float>(D);
  const BlockRounds rounds = block_rounds(L);
  // K's fields of a round are loaded during the previous round's V work, V's at the start of the round,
  // so that neither kind of load is waited for right after it is issued (ncu: the kernel spent half its
  // time between issues waiting on loads when both were loaded at the start of the round).
  const auto slot_of = [&](int64_t first) {
    return slots + min(first + threadIdx.x / L, vectors - 1) * params.slot_bytes;
  };
  const auto load_k = [&](const uint8_t* slot, uint32_t* nibbles, uint16_t& norm_h) {
#pragma unroll
    for (int j = 0; j < J; ++j) load_run<C / 2>(slot + (j * L + lane) * C / 2, &nibbles[j], kWide);
    norm_h = load_fp16(slot + D / 2, kWide);
  };
  uint32_t next_k_nibbles[J];
  uint16_t next_norm_h;
  load_k(slot_of(rounds.first), next_k_nibbles, next_norm_h);
  for (int64_t first = rounds.first; first < vectors; first += rounds.step) {
    const int64_t n = first + threadIdx.x / L;
    const bool active = n < vectors;
    const uint8_t* slot = slot_of(first);
    uint32_t k_nibbles[J], v_nibbles[J];
#pragma unroll
    for (int j = 0; j < J; ++j) {
      k_nibbles[j] = next_k_nibbles[j];
      load_run_u16<C / 2>(slot + D / 2 + 2 + (j * L + lane) * C / 2, &v_nibbles[j], kWide);
    }
    const uint16_t norm_h = next_norm_h;
    const uint16_t scale_h = load_fp16(slot + D + 2, kWide), zero_h = load_fp16(slot + D + 4, kWide);
    float x[E];
#pragma unroll
    for (int b = 0; b < E / 2; ++b) {
      const float2 pair = byte_centroids[(k_nibbles[b / 4] >> (8 * (b % 4))) & 0xffu];
      x[2 * b] = pair.x;
      x[2 * b + 1] = pair.y;
    }
    walsh_hadamard_interleaved<D>(x, lane);
    const bool finite_norm = (norm_h & 0x7c00u) != 0x7c00u;
    const float scale = (finite_norm ? gpu::fp16_bits_value(norm_h) : fp16_to_float(norm_h)) * inverse_d;
#pragma unroll
    for (int i = 0; i < E; ++i) x[i] = x[i] * scale;  // s * x * scale: the sign goes on the bf16 bits
#pragma unroll
    for (int j = 0; j < J && active; ++j) {
      const int chunk = j * L + lane;
      uint32_t flip[C / 2];
      load_words<C / 2>(flips + chunk * C / 2, flip);
      store_bf16<C>(x + j * C, bounded && finite_norm, flip, k + n * D + chunk * C);
    }
    load_k(slot_of(first + rounds.step), next_k_nibbles, next_norm_h);
    if (!active) continue;
    const bool finite = affine_dequantize<E>(v_nibbles, scale_h, zero_h, x);
#pragma unroll
    for (int j = 0; j < J; ++j) store_bf16<C>(x + j * C, finite, none, v + n * D + (j * L + lane) * C);
  }
}

// int4 chunks: E = min(g, 32) consecutive elements of x, `lanes` = g / E chunks per group, in order.
struct Int4Chunks {
  uint32_t per_row, lanes;
  __device__ explicit Int4Chunks(const Int4GroupParams& params, int e)
      : per_row(static_cast<uint32_t>(params.row_elements / e)),
        lanes(static_cast<uint32_t>(params.group_size / e)) {}
};

// E/8 words of nibbles at a 4-byte aligned address, as one 16-byte access where E = 32 and it is aligned.
template <int E>
__device__ void store_nibble_words(const uint32_t* packed, uint32_t* dst) {
  if constexpr (E == 32) {
    if (reinterpret_cast<uintptr_t>(dst) % 16 == 0) {
      *reinterpret_cast<uint4*>(dst) = make_uint4(packed[0], packed[1], packed[2], packed[3]);
      return;
    }
  }
#pragma unroll
  for (int w = 0; w < E / 8; ++w) dst[w] = packed[w];
}

// x: [rows, d] bf16; records: [rows, record_bytes]. One lane per chunk of E elements.
template <int E>
__global__ void __launch_bounds__(kThreads)
    int4_group_quantize_kernel(Int4GroupParams params, const uint16_t* x, uint8_t* records, uint32_t chunks) {
  const Int4Chunks shape(params, E);
  const uint32_t none[E / 2] = {};
  const BlockRounds rounds = block_rounds(1);
  for (int64_t first = rounds.first; first < chunks; first += rounds.step) {
    const uint32_t c = static_cast<uint32_t>(first) + threadIdx.x;
    const bool active = c < chunks;
    const uint32_t chunk = active ? c : chunks - 1;
    uint32_t words[E / 2];
    load_words<E / 2>(x + int64_t{chunk} * E, words);
    float value[E];
    unpack_bf16<E>(words, none, value);
    float lo, hi;
    min_max_bf16<E>(words, lo, hi);
    for (uint32_t distance = shape.lanes / 2; distance > 0; distance >>= 1) {
      lo = fminf(lo, gpu::shfl_xor(lo, static_cast<int>(distance), kWarp));
      hi = fmaxf(hi, gpu::shfl_xor(hi, static_cast<int>(distance), kWarp));
    }
    if (!active) continue;
    uint16_t scale_h, zero_h;
    uint32_t packed[E / 8];
    affine_quantize<E>(value, lo, hi, scale_h, zero_h, packed);
    const uint32_t row = chunk / shape.per_row, in_row = chunk % shape.per_row;
    uint8_t* record = records + int64_t{row} * params.record_bytes();
    uint32_t* nibbles = reinterpret_cast<uint32_t*>(record + in_row * (E / 2));  // 4-byte aligned
    store_nibble_words<E>(packed, nibbles);
    if (in_row % shape.lanes == 0) {
      reinterpret_cast<uint32_t*>(record + params.row_elements / 2)[in_row / shape.lanes] =
          scale_h | (static_cast<uint32_t>(zero_h) << 16);
    }
  }
}

// The dequantize lanes of 8 elements (kDequantizeElements) each take kInt4ChunksPerLane chunks per round,
// a grid stride apart, and load the next round's while computing this one: with the loads of a round
// issued just before its arithmetic, the kernel waited on memory (ncu: 15 of 22 cycles between issues
// stalled on loads).
constexpr int kInt4ChunksPerLane = 4;

// The words a lane of the int4 dequantize kernel loads for a round: nibbles and (scale, zero) of each
// chunk. Chunks past the end load the last one's, so that every load is in bounds.
struct Int4Round {
  uint32_t nibbles[kInt4ChunksPerLane], scale_zero[kInt4ChunksPerLane];
};

// records: [rows, record_bytes]; x: [rows, d] bf16. kPowerOfTwoRow: d / 8 is a power of two, so the row
// of a chunk is a shift instead of a division (a dozen instructions on a GPU).
template <bool kPowerOfTwoRow>
__global__ void __launch_bounds__(kThreads)
    int4_group_dequantize_kernel(Int4GroupParams params, const uint8_t* __restrict__ records,
                                 uint16_t* __restrict__ x, uint32_t chunks) {
  constexpr int E = kDequantizeElements, R = kInt4ChunksPerLane;
  const Int4Chunks shape(params, E);
  const uint32_t row_shift = __ffs(shape.per_row) - 1, group_shift = __ffs(shape.lanes) - 1;
  const uint32_t record_bytes = params.record_bytes(), scales_at = params.row_elements / 2;
  const int64_t stride = int64_t{gridDim.x} * kThreads;
  const auto load = [&](int64_t first) {
    Int4Round round;
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const uint32_t chunk = static_cast<uint32_t>(min(first + r * stride, int64_t{chunks} - 1));
      const uint32_t row = kPowerOfTwoRow ? chunk >> row_shift : chunk / shape.per_row;
      const uint32_t in_row = chunk - row * shape.per_row;
      const uint8_t* record = records + int64_t{row} * record_bytes;
      round.nibbles[r] = reinterpret_cast<const uint32_t*>(record)[in_row];
      round.scale_zero[r] = reinterpret_cast<const uint32_t*>(record + scales_at)[in_row >> group_shift];
    }
    return round;
  };
  int64_t first = int64_t{blockIdx.x} * kThreads + threadIdx.x;
  for (Int4Round round = load(first); first < chunks; first += R * stride) {
    const Int4Round next = load(first + R * stride);
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const int64_t chunk = first + r * stride;
      if (chunk >= chunks) break;
      float value[E];
      const bool finite =
          affine_dequantize<E>(&round.nibbles[r], static_cast<uint16_t>(round.scale_zero[r] & 0xffffu),
                               static_cast<uint16_t>(round.scale_zero[r] >> 16), value);
      const uint32_t none[E / 2] = {};
      store_bf16<E>(value, finite, none, x + chunk * E);
    }
    round = next;
  }
}

void require_aligned(const void* p, uintptr_t alignment, const char* what) {
  if (reinterpret_cast<uintptr_t>(p) % alignment != 0) {
    throw std::invalid_argument(std::string(what) + " must be " + std::to_string(alignment) +
                                "-byte aligned");
  }
}

// Enough blocks of `Kernel` for every item, but no more than the GPU holds at once: the kernels stride
// over the rest, so per-lane setup (cell table, rotation signs) is paid once per resident thread. The
// count comes from the kernel's own occupancy: at 80 registers a thread only 3 blocks fit on an SM, and
// a grid sized for 8 would end in a partly idle extra wave.
template <auto Kernel>
unsigned blocks_for(int64_t items, int64_t items_per_block) {
  static const int64_t resident = gpu::resident_blocks(reinterpret_cast<const void*>(Kernel), kThreads);
  int64_t blocks = (items + items_per_block - 1) / items_per_block;
  return static_cast<unsigned>(blocks < resident ? blocks : resident);
}

// Launches `Kernel` on `stream` over `items` in a one-wave grid (blocks_for) of kThreads-thread blocks.
template <auto Kernel, typename... Args>
void launch_one_wave(int64_t items, int64_t items_per_block, gpuStream_t stream, Args... args) {
  Kernel<<<blocks_for<Kernel>(items, items_per_block), kThreads, 0, stream>>>(args...);
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

// Calls f(std::integral_constant<int, head_dim>{}) for a head_dim check_turboquant accepted.
template <typename F>
void with_head_dim(int head_dim, F&& f) {
  switch (head_dim) {
    case 32:
      return f(std::integral_constant<int, 32>{});
    case 64:
      return f(std::integral_constant<int, 64>{});
    case 128:
      return f(std::integral_constant<int, 128>{});
    case 256:
      return f(std::integral_constant<int, 256>{});
    default:
      return f(std::integral_constant<int, 512>{});
  }
}

// Checks the int4 arguments and returns the number of chunks (lanes) of one launch.
uint32_t int4_chunks(const Int4GroupParams& params, const void* x, const void* records, int64_t rows,
                     int elements_per_lane) {
  const int g = params.group_size;
  if (g < 8 || g > 256 || (g & (g - 1)) != 0 || params.row_elements % g != 0) {
    throw std::invalid_argument("int4: bad params; build them with int4_group_params()");
  }
  require_aligned(x, 16, "int4: x");
  require_aligned(records, 4, "int4: records");
  const int64_t chunks = rows * (params.row_elements / elements_per_lane);
  if (rows > 0 && chunks >= (int64_t{1} << 32) - kThreads) {
    throw std::invalid_argument(
        "int4: more than 2^32 lanes' worth of elements in one launch; split the call");
  }
  return static_cast<uint32_t>(std::max<int64_t>(chunks, 0));
}

// Calls f(std::integral_constant<int, E>{}) for E = min(group_size, 32) elements per lane.
template <typename F>
void with_chunk_elements(int group_size, F&& f) {
  switch (std::min(group_size, 32)) {
    case 8:
      return f(std::integral_constant<int, 8>{});
    case 16:
      return f(std::integral_constant<int, 16>{});
    default:
      return f(std::integral_constant<int, 32>{});
  }
}

}  // namespace

void turboquant_quantize(const TurboQuantParams& params, const uint16_t* k, const uint16_t* v, uint8_t* slots,
                         int64_t vectors, gpuStream_t stream) {
  check_turboquant(params, k, v);
  if (vectors <= 0) return;
  const bool use_table = cell_table_is_exact(params.codebook);
  with_head_dim(params.head_dim, [&](auto d) {
    constexpr int kD = decltype(d)::value;
    constexpr int64_t kPerBlock = kThreads / QuantizeLayout<kD>::kLanes;
    if (use_table) {
      launch_one_wave<turboquant_quantize_kernel<kD, true>>(vectors, kPerBlock, stream, params, k, v, slots,
                                                            vectors);
    } else {
      launch_one_wave<turboquant_quantize_kernel<kD, false>>(vectors, kPerBlock, stream, params, k, v, slots,
                                                             vectors);
    }
  });
  KVTIER_GPU_CHECK_LAUNCH("turboquant_quantize_kernel");
}

void turboquant_dequantize(const TurboQuantParams& params, const uint8_t* slots, uint16_t* k, uint16_t* v,
                           int64_t vectors, gpuStream_t stream) {
  check_turboquant(params, k, v);
  if (vectors <= 0) return;
  const bool wide = reinterpret_cast<uintptr_t>(slots) % 8 == 0 && params.slot_bytes % 8 == 0;
  with_head_dim(params.head_dim, [&](auto d) {
    constexpr int kD = decltype(d)::value;
    constexpr int64_t kPerBlock = kThreads / DequantizeLayout<kD>::kLanes;
    if (wide) {
      launch_one_wave<turboquant_dequantize_kernel<kD, true>>(vectors, kPerBlock, stream, params, slots, k, v,
                                                              vectors);
    } else {
      launch_one_wave<turboquant_dequantize_kernel<kD, false>>(vectors, kPerBlock, stream, params, slots, k,
                                                               v, vectors);
    }
  });
  KVTIER_GPU_CHECK_LAUNCH("turboquant_dequantize_kernel");
}

void int4_group_quantize(const Int4GroupParams& params, const uint16_t* x, uint8_t* records, int64_t rows,
                         gpuStream_t stream) {
  const uint32_t chunks = int4_chunks(params, x, records, rows, std::min(params.group_size, 32));
  if (chunks == 0) return;
  with_chunk_elements(params.group_size, [&](auto e) {
    constexpr int kE = decltype(e)::value;
    launch_one_wave<int4_group_quantize_kernel<kE>>(chunks, kThreads, stream, params, x, records, chunks);
  });
  KVTIER_GPU_CHECK_LAUNCH("int4_group_quantize_kernel");
}

void int4_group_dequantize(const Int4GroupParams& params, const uint8_t* records, uint16_t* x, int64_t rows,
                           gpuStream_t stream) {
  const uint32_t chunks = int4_chunks(params, x, records, rows, kDequantizeElements);
  if (chunks == 0) return;
  const int per_row = params.row_elements / kDequantizeElements;
  constexpr int64_t kPerBlock = kThreads * kInt4ChunksPerLane;
  if ((per_row & (per_row - 1)) == 0) {
    launch_one_wave<int4_group_dequantize_kernel<true>>(chunks, kPerBlock, stream, params, records, x,
                                                        chunks);
  } else {
    launch_one_wave<int4_group_dequantize_kernel<false>>(chunks, kPerBlock, stream, params, records, x,
                                                         chunks);
  }
  KVTIER_GPU_CHECK_LAUNCH("int4_group_dequantize_kernel");
}

}  // namespace kvtier::hw
