// The forward pass of one engine step of a dense GQA transformer on one GPU, with random bf16 weights of
// the model's exact shapes: the compute half of a serving loop whose time can be set against the
// simulator's.
//
// A step is a batch of sequences, each with new tokens (a prefill chunk, or 1 for decode) after a context
// already in the paged KV cache. Per layer, on the concatenated tokens of the batch:
//
//   h = rmsnorm(x)                       elementwise.h
//   qkv = h Wqkv^T                       gemm.h
//   rope_and_cache(qkv)                  Q rotated to a buffer, K rotated and V into the pages
//   a = paged_attention(Q, pages)        attention.h
//   x += a Wo^T                          (the residual add is the GEMM's beta = 1)
//   h = rmsnorm(x); g|u = h Wgu^T; m = silu(g) * u; x += m Wdown^T
//
// then the final norm and the LM head on each sequence's last token only, as serving engines do. The KV
// cache is one bf16 layer group holding every layer (KvPageGeometry, paged_kv.h), pages of block_tokens
// tokens: byte-compatible with a one-group HbmKvCache of the bf16 layout.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "hw/model/attention_plan.h"
#include "hw/model/gemm.h"
#include "hw/gpu/device_buffer.h"
#include "hw/model/model_reference.h"
#include "hw/model/paged_kv.h"
#include "hw/model/transformer_shape.h"

namespace kvtier::hw {

// The forward pass's KV page: every layer of `shape` in one bf16 group, block_tokens tokens.
inline KvPageGeometry forward_kv_geometry(const TransformerShape& shape, int block_tokens) {
  return {.layers_in_group = shape.layers,
          .kv_heads = shape.kv_heads,
          .head_dim = shape.head_dim,
          .block_tokens = block_tokens};
}

struct ForwardConfig {
  TransformerShape shape;
  int block_tokens = 16;
  int64_t kv_pages = 0;      // pages in the pool
  int max_step_tokens = 0;   // new tokens of a step, all sequences together
  int max_sequences = 1;
  int max_pages_per_sequence = 0;
  GemmBackend gemm = GemmBackend::kBlasLt;
  int attention_rows = kAttentionRows;  // query rows of an attention block (attention.h)
  uint64_t seed = 1;
  // KV pages another owner holds (kvtier-hw serve: the tiered store's HBM pool), kv_pages of them every
  // external_kv_page_stride bf16 elements (a multiple of 8, at least a page); null: the forward allocates
  // its own pool and fills it with random KV.
  uint16_t* external_kv_pool = nullptr;
  int64_t external_kv_page_stride = 0;
};

class TransformerForward {
 public:
  // Allocates and fills the weights, the KV pool and the step's buffers; throws gpu::GpuError when HBM is
  // short and std::invalid_argument for a bad shape or configuration.
  TransformerForward(const ForwardConfig& config, gpuStream_t stream);

  // Enqueues one step on the stream: sequences[s] has new_tokens after context_tokens cached positions, its
  // pages listing pool pages for positions 0 .. context + new - 1; token_ids holds the new tokens in order.
  // Returns once the step is enqueued (the batch description is copied synchronously first).
  void step(std::span<const HostSequence> sequences, std::span<const int> token_ids);

  // Enqueues only the attention of such a step, every layer's launch over the pool as step() makes it (the
  // queries are whatever the last step left): what calibration times to fit the attention cost model.
  void attention(std::span<const HostSequence> sequences);
  // [sequences of the last step][vocab] bf16, valid once the stream has finished the step.
  const uint16_t* logits() const { return logits_.data(); }
  uint16_t* kv_pool() const { return kv_pool_; }
  const KvPageGeometry& kv_geometry() const { return geometry_; }
  int64_t kv_page_stride() const { return kv_page_stride_; }
  const ForwardConfig& config() const { return config_; }

 private:
  struct LayerWeights {
    const uint16_t *qkv, *out, *gate_up, *down, *attention_norm, *mlp_norm;
  };
  LayerWeights layer_weights(int layer) const;
  void upload_batch(std::span<const HostSequence> sequences, std::span<const int> token_ids);
  int attention_splits_of_batch() const;  // of the uploaded batch, as attention_plan.h cuts it
  void attention_layer(int layer, int splits);

  ForwardConfig config_;
  gpuStream_t stream_;
  KvPageGeometry geometry_;
  Gemm gemm_;
  gpu::DeviceBuffer<uint16_t> weights_, embedding_, lm_head_, final_norm_, own_kv_pool_;
  uint16_t* kv_pool_ = nullptr;
  int64_t kv_page_stride_ = 0;
  gpu::DeviceBuffer<uint16_t> residual_, normed_, qkv_, q_, attention_, gate_up_, mlp_, logits_;
  gpu::DeviceBuffer<float> attention_workspace_;
  gpu::DeviceBuffer<int> batch_ints_;
  std::vector<int> host_ints_;
  StepBatch batch_;
  const int* token_ids_ = nullptr;
  const int* last_rows_ = nullptr;
  int multiprocessors_ = 0;
};

}  // namespace kvtier::hw
