// The layout of bf16 K/V inside the pages of the HBM KV cache, and the batch a step attends over.
//
// The store (store/hbm_kv_cache.h, kernels/page_copy.h) keeps one pool per layer group and moves page p of
// every group as opaque bytes: page_bytes = block_tokens * layers * 2 * kv_heads * head_dim * 2 for a bf16
// group. Inside a page the model writes, and attention reads,
//
//   [layer in group][K or V][kv head][token slot][head_dim]      (bf16)
//
// so that the head_dim x block_tokens rows of one (layer, K/V, head) lie contiguously: a 64-token tile of
// one head is one run of 64 * head_dim * 2 bytes when block_tokens >= 64, and block_tokens runs otherwise.
// Offloads and reloads by the store stay byte-compatible because the store never looks inside a page.
// The structs here are plain data shared by the CPU reference and the GPU kernels.
#pragma once

#include <cstdint>

namespace kvtier::hw {

// Where the K/V of one pool's pages sit: the geometry of one bf16 layer group.
struct KvPageGeometry {
  int layers_in_group = 1;
  int kv_heads = 1;
  int head_dim = 128;
  int block_tokens = 16;

  int64_t head_elements() const { return int64_t{block_tokens} * head_dim; }  // one (layer, K/V, head)
  int64_t layer_elements() const { return 2 * kv_heads * head_elements(); }
  int64_t page_elements() const { return layers_in_group * layer_elements(); }
  int64_t page_bytes() const { return page_elements() * 2; }
  // Element offset inside a page of (layer in group, K (0) or V (1), head, slot, dimension).
  int64_t offset(int layer, int k_or_v, int head, int slot, int dim) const {
    return layer * layer_elements() + (int64_t{k_or_v} * kv_heads + head) * head_elements() +
           int64_t{slot} * head_dim + dim;
  }
};

// One layer's K/V as kernels address it: element (k_or_v, head, token slot, dim) of page p is at
// pool[p * page_stride + k_or_v * v_offset + k_offset + head * head_stride + slot * head_dim + dim].
// page_stride and the offsets are in bf16 elements and multiples of 8 (16-byte aligned rows).
struct PagedKvLayer {
  uint16_t* pool = nullptr;  // bf16
  int64_t page_stride = 0;
  int64_t k_offset = 0;  // this layer's K inside a page
  int64_t v_offset = 0;  // from K to V of the same layer
  int64_t head_stride = 0;
  int block_tokens = 0;
  int kv_heads = 0;
  int head_dim = 0;
};

// Layer `layer_in_group` of a pool laid out by `geometry`, pages every `page_stride` elements.
inline PagedKvLayer paged_kv_layer(uint16_t* pool, int64_t page_stride, const KvPageGeometry& geometry,
                                   int layer_in_group) {
  return {pool,
          page_stride,
          geometry.offset(layer_in_group, 0, 0, 0, 0),
          geometry.offset(0, 1, 0, 0, 0),
          geometry.head_elements(),
          geometry.block_tokens,
          geometry.kv_heads,
          geometry.head_dim};
}

// The sequences of one engine step, as device (or, for the reference, host) arrays. Sequence s has
// new_tokens = query_start[s + 1] - query_start[s] queries, rows query_start[s].. of the step's token
// matrices, at positions context_tokens[s] ..; its K/V for positions 0 .. context + new - 1 are in pages
// block_table[s * block_table_stride + position / block_tokens].
struct StepBatch {
  int sequences = 0;
  const int* query_start = nullptr;     // [sequences + 1]
  const int* context_tokens = nullptr;  // [sequences]
  const int* block_table = nullptr;     // [sequences][block_table_stride]
  int block_table_stride = 0;
  int total_new_tokens = 0;  // query_start[sequences]
  int max_new_tokens = 0;    // the largest new_tokens of a sequence (grid size)
  int max_total_tokens = 0;  // the largest context + new_tokens (split sizing)
};

}  // namespace kvtier::hw
