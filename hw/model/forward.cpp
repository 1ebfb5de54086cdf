#include "hw/model/forward.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "hw/model/attention.h"
#include "hw/model/attention_plan.h"
#include "hw/model/elementwise.h"

namespace kvtier::hw {
namespace {

constexpr int64_t kAttentionWorkspaceFloats = int64_t{16} << 20;

size_t elements(int64_t a, int64_t b) { return static_cast<size_t>(a * b); }

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("forward config: " + what);
}

}  // namespace

TransformerForward::TransformerForward(const ForwardConfig& config, gpuStream_t stream)
    : config_(config),
      stream_(stream),
      geometry_(forward_kv_geometry(config.shape, config.block_tokens)),
      gemm_(stream, config.gemm) {
  const TransformerShape& s = config.shape;
  s.validate();
  require(config.block_tokens > 0 && config.kv_pages > 0, "block_tokens and kv_pages must be positive");
  require(config.max_step_tokens > 0 && config.max_sequences > 0 && config.max_pages_per_sequence > 0,
          "max_step_tokens, max_sequences and max_pages_per_sequence must be positive");
  const int64_t per_layer = s.linear_params_per_layer() + 2 * int64_t{s.hidden};
  weights_ = gpu::DeviceBuffer<uint16_t>(elements(per_layer, s.layers));
  embedding_ = gpu::DeviceBuffer<uint16_t>(elements(s.vocab, s.hidden));
  lm_head_ = gpu::DeviceBuffer<uint16_t>(elements(s.vocab, s.hidden));
  final_norm_ = gpu::DeviceBuffer<uint16_t>(static_cast<size_t>(s.hidden));
  if (config.external_kv_pool != nullptr) {
    require(config.external_kv_page_stride >= geometry_.page_elements() && config.external_kv_page_stride % 8 == 0,
            "an external KV pool needs a page stride of at least a page, in multiples of 8 elements");
    kv_pool_ = config.external_kv_pool;
    kv_page_stride_ = config.external_kv_page_stride;
  } else {
    own_kv_pool_ = gpu::DeviceBuffer<uint16_t>(elements(config.kv_pages, geometry_.page_elements()));
    kv_pool_ = own_kv_pool_.data();
    kv_page_stride_ = geometry_.page_elements();
  }
  const int64_t t = config.max_step_tokens;
  residual_ = gpu::DeviceBuffer<uint16_t>(elements(t, s.hidden));
  normed_ = gpu::DeviceBuffer<uint16_t>(elements(std::max<int64_t>(t, config.max_sequences), s.hidden));
  qkv_ = gpu::DeviceBuffer<uint16_t>(elements(t, s.qkv_width()));
  q_ = gpu::DeviceBuffer<uint16_t>(elements(t, s.q_width()));
  attention_ = gpu::DeviceBuffer<uint16_t>(elements(t, s.q_width()));
  gate_up_ = gpu::DeviceBuffer<uint16_t>(elements(t, 2 * int64_t{s.intermediate}));
  mlp_ = gpu::DeviceBuffer<uint16_t>(elements(t, s.intermediate));
  logits_ = gpu::DeviceBuffer<uint16_t>(elements(config.max_sequences, s.vocab));
  attention_workspace_ = gpu::DeviceBuffer<float>(static_cast<size_t>(kAttentionWorkspaceFloats));
  const int64_t ints = 3 * int64_t{config.max_sequences} + 1 +
                       int64_t{config.max_sequences} * config.max_pages_per_sequence + t;
  batch_ints_ = gpu::DeviceBuffer<int>(static_cast<size_t>(ints));
  KVTIER_GPU_CHECK(gpuDeviceGetAttribute(&multiprocessors_, gpuDevAttrMultiProcessorCount, 0));

  // Uniform weights of variance 1 / fan-in keep activations of order one through the layers.
  uint64_t seed = config.seed;
  auto fill = [&](uint16_t* data, int64_t count, int64_t fan_in) {
    fill_random(data, count, seed++, static_cast<float>(std::sqrt(3.0 / static_cast<double>(fan_in))), 0.0f, stream);
  };
  for (int layer = 0; layer < s.layers; ++layer) {
    const LayerWeights w = layer_weights(layer);
    fill(const_cast<uint16_t*>(w.qkv), int64_t{s.qkv_width()} * s.hidden, s.hidden);
    fill(const_cast<uint16_t*>(w.out), int64_t{s.hidden} * s.q_width(), s.q_width());
    fill(const_cast<uint16_t*>(w.gate_up), 2 * int64_t{s.intermediate} * s.hidden, s.hidden);
    fill(const_cast<uint16_t*>(w.down), int64_t{s.hidden} * s.intermediate, s.intermediate);
    fill_random(const_cast<uint16_t*>(w.attention_norm), 2 * int64_t{s.hidden}, seed++, 0.1f, 1.0f, stream);
  }
  fill_random(embedding_.data(), int64_t{s.vocab} * s.hidden, seed++, 1.0f, 0.0f, stream);
  fill(lm_head_.data(), int64_t{s.vocab} * s.hidden, s.hidden);
  fill_random(final_norm_.data(), s.hidden, seed++, 0.1f, 1.0f, stream);
  if (own_kv_pool_.size() > 0)
    fill_random(own_kv_pool_.data(), static_cast<int64_t>(own_kv_pool_.size()), seed++, 1.0f, 0.0f, stream);
  KVTIER_GPU_CHECK(gpuStreamSynchronize(stream));
}

TransformerForward::LayerWeights TransformerForward::layer_weights(int layer) const {
  const TransformerShape& s = config_.shape;
  const uint16_t* base = weights_.data() + (s.linear_params_per_layer() + 2 * int64_t{s.hidden}) * layer;
  LayerWeights w{};
  w.qkv = base;
  w.out = w.qkv + int64_t{s.qkv_width()} * s.hidden;
  w.gate_up = w.out + int64_t{s.hidden} * s.q_width();
  w.down = w.gate_up + 2 * int64_t{s.intermediate} * s.hidden;
  w.attention_norm = w.down + int64_t{s.hidden} * s.intermediate;
  w.mlp_norm = w.attention_norm + s.hidden;
  return w;
}

void TransformerForward::upload_batch(std::span<const HostSequence> sequences, std::span<const int> token_ids) {
  const int count = static_cast<int>(sequences.size());
  const int stride = config_.max_pages_per_sequence;
  require(count > 0 && count <= config_.max_sequences, "a step needs 1 to max_sequences sequences");
  host_ints_.assign(batch_ints_.size(), 0);
  int* query_start = host_ints_.data();
  int* context = query_start + count + 1;
  int* table = context + count;
  int* tokens = table + int64_t{count} * stride;
  batch_ = StepBatch{};
  for (int i = 0; i < count; ++i) {
    const HostSequence& seq = sequences[static_cast<size_t>(i)];
    const int64_t positions = int64_t{seq.context_tokens} + seq.new_tokens;
    require(seq.new_tokens > 0 && seq.context_tokens >= 0, "every sequence needs new tokens");
    require(static_cast<int64_t>(seq.pages.size()) * config_.block_tokens >= positions &&
                static_cast<int>(seq.pages.size()) <= stride,
            "sequence " + std::to_string(i) + " needs pages for its " + std::to_string(positions) + " positions");
    for (int page : seq.pages) require(page >= 0 && page < config_.kv_pages, "page id outside the pool");
    query_start[i + 1] = query_start[i] + seq.new_tokens;
    context[i] = seq.context_tokens;
    std::copy(seq.pages.begin(), seq.pages.end(), table + int64_t{i} * stride);
    batch_.max_new_tokens = std::max(batch_.max_new_tokens, seq.new_tokens);
    batch_.max_total_tokens = std::max(batch_.max_total_tokens, static_cast<int>(positions));
  }
  const int total = query_start[count];
  require(total <= config_.max_step_tokens && static_cast<int>(token_ids.size()) == total,
          "a step needs one token id per new token, at most max_step_tokens");
  std::copy(token_ids.begin(), token_ids.end(), tokens);
  int* last_rows = tokens + total;
  for (int i = 0; i < count; ++i) last_rows[i] = query_start[i + 1] - 1;
  const size_t used = static_cast<size_t>(last_rows + count - host_ints_.data());
  KVTIER_GPU_CHECK(gpuMemcpy(batch_ints_.data(), host_ints_.data(), used * sizeof(int), gpuMemcpyHostToDevice));
  const int* device = batch_ints_.data();
  batch_.sequences = count;
  batch_.query_start = device;
  batch_.context_tokens = device + (context - query_start);
  batch_.block_table = device + (table - query_start);
  batch_.block_table_stride = stride;
  batch_.total_new_tokens = total;
  token_ids_ = device + (tokens - query_start);
  last_rows_ = device + (last_rows - query_start);
}

int TransformerForward::attention_splits_of_batch() const {
  const TransformerShape& s = config_.shape;
  int splits = attention_splits(batch_.sequences, batch_.max_new_tokens, batch_.max_total_tokens, s.kv_heads,
                                s.gqa_ratio(), multiprocessors_, config_.attention_rows);
  while (splits > 1 &&
         attention_workspace_floats(batch_.total_new_tokens, s.heads, s.head_dim, splits) > kAttentionWorkspaceFloats)
    --splits;
  return splits;
}

void TransformerForward::attention_layer(int layer, int splits) {
  const TransformerShape& s = config_.shape;
  const PagedKvLayer kv = paged_kv_layer(kv_pool_, kv_page_stride_, geometry_, layer);
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(s.head_dim)));
  paged_attention(batch_, kv, q_.data(), attention_.data(), s.heads, scale, splits, attention_workspace_.data(),
                  stream_, config_.attention_rows);
}

void TransformerForward::attention(std::span<const HostSequence> sequences) {
  size_t new_tokens = 0;
  for (const HostSequence& seq : sequences) new_tokens += static_cast<size_t>(seq.new_tokens);
  upload_batch(sequences, std::vector<int>(new_tokens, 0));
  const int splits = attention_splits_of_batch();
  for (int layer = 0; layer < config_.shape.layers; ++layer) attention_layer(layer, splits);
}

void TransformerForward::step(std::span<const HostSequence> sequences, std::span<const int> token_ids) {
  upload_batch(sequences, token_ids);
  const TransformerShape& s = config_.shape;
  const int t = batch_.total_new_tokens;
  const int splits = attention_splits_of_batch();

  embed_tokens(token_ids_, embedding_.data(), residual_.data(), t, s.hidden, stream_);
  for (int layer = 0; layer < s.layers; ++layer) {
    const LayerWeights w = layer_weights(layer);
    const PagedKvLayer kv = paged_kv_layer(kv_pool_, kv_page_stride_, geometry_, layer);
    rmsnorm(residual_.data(), w.attention_norm, normed_.data(), t, s.hidden, s.rms_eps, nullptr, stream_);
    gemm_.linear(normed_.data(), w.qkv, qkv_.data(), t, s.hidden, s.qkv_width(), false);
    rope_and_cache(qkv_.data(), batch_, s, kv, q_.data(), stream_);
    attention_layer(layer, splits);
    gemm_.linear(attention_.data(), w.out, residual_.data(), t, s.q_width(), s.hidden, true);
    rmsnorm(residual_.data(), w.mlp_norm, normed_.data(), t, s.hidden, s.rms_eps, nullptr, stream_);
    gemm_.linear(normed_.data(), w.gate_up, gate_up_.data(), t, s.hidden, 2 * s.intermediate, false);
    silu_mul(gate_up_.data(), mlp_.data(), t, s.intermediate, stream_);
    gemm_.linear(mlp_.data(), w.down, residual_.data(), t, s.intermediate, s.hidden, true);
  }
  rmsnorm(residual_.data(), final_norm_.data(), normed_.data(), batch_.sequences, s.hidden, s.rms_eps, last_rows_,
          stream_);
  gemm_.linear(normed_.data(), lm_head_.data(), logits_.data(), batch_.sequences, s.hidden, s.vocab, false);
}

}  // namespace kvtier::hw
