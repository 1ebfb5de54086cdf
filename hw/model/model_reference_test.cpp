// The CPU references and the work plan of the model kernels against hand arithmetic (no GPU needed).
#include "hw/model/model_reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <vector>

#include "hw/model/attention_plan.h"
#include "sim/core/kv_layout.h"
#include "hw/kernels/page_copy.h"
#include "hw/kernels/quant_math.h"

namespace kvtier::hw {
namespace {

std::vector<uint16_t> bf16(std::initializer_list<float> values) {
  std::vector<uint16_t> out;
  for (float v : values) out.push_back(float_to_bf16(v));
  return out;
}

TEST(ModelReference, RmsnormDividesByTheRootMeanSquareAndScales) {
  // Row [3, 4, 0, 0]: mean square 25 / 4, so x / 2.5; weights [1, 2, 1, 1].
  const auto out = rmsnorm_reference(bf16({3, 4, 0, 0}), bf16({1, 2, 1, 1}), 4, 0.0f);
  EXPECT_DOUBLE_EQ(out[0], 1.2);
  EXPECT_DOUBLE_EQ(out[1], 3.2);
  EXPECT_DOUBLE_EQ(out[2], 0.0);
}

TEST(ModelReference, SiluMulTakesGateThenUp) {
  const auto out = silu_mul_reference(bf16({0, 1, 5, 2}), 2);  // gate [0, 1], up [5, 2]
  EXPECT_DOUBLE_EQ(out[0], 0.0);
  EXPECT_NEAR(out[1], 2.0 / (1.0 + std::exp(-1.0)), 1e-15);
}

TEST(ModelReference, RopePairsElementIWithIPlusHalf) {
  std::vector<double> head = {1, 2, 3, 4};
  rope_reference(head, 0, 100.0);
  EXPECT_EQ(head, (std::vector<double>{1, 2, 3, 4}));
  // Position 1, head_dim 4, theta 100: pair (0, 2) turns by 1 rad, pair (1, 3) by 100^(-1/2) = 0.1 rad.
  rope_reference(head, 1, 100.0);
  EXPECT_NEAR(head[0], std::cos(1.0) - 3 * std::sin(1.0), 1e-12);
  EXPECT_NEAR(head[2], 3 * std::cos(1.0) + std::sin(1.0), 1e-12);
  EXPECT_NEAR(head[1], 2 * std::cos(0.1) - 4 * std::sin(0.1), 1e-12);
  EXPECT_NEAR(head[3], 4 * std::cos(0.1) + 2 * std::sin(0.1), 1e-12);
}

TEST(ModelReference, PageGeometryMatchesTheStoresBf16Page) {
  // Llama-3.1-8B in one bf16 group of 32 layers, 16-token pages: 16 * 32 * 2 * 8 * 128 * 2 bytes = 2 MiB.
  const KvPageGeometry geometry{32, 8, 128, 16};
  EXPECT_EQ(geometry.page_bytes(), 2 << 20);
  ModelCard card;
  card.name = "llama-shaped";
  card.layers = 32;
  card.hidden_size = 4096;
  card.query_heads = 32;
  card.kv_heads = 8;
  card.head_dim = 128;
  const KvLayout layout = build_layout(card, *kv_preset("bf16"), "bf16");
  ASSERT_EQ(layout.groups.size(), 1u);
  EXPECT_EQ(layout_page_bytes(layout, 16)[0], geometry.page_bytes());
  // V of layer 1, head 2, slot 3, dim 4: layer 1 starts at 2 * 8 * 2048 elements, V at 8 * 2048 more.
  EXPECT_EQ(geometry.offset(1, 1, 2, 3, 4), 32768 + 16384 + 2 * 2048 + 3 * 128 + 4);
}

// A one-head sequence whose K/V sit in scattered pages of a pool, for the attention reference.
struct TinyCache {
  KvPageGeometry geometry{1, 1, 64, 4};
  std::vector<uint16_t> pool = std::vector<uint16_t>(static_cast<size_t>(8 * geometry.page_elements()));
  void set(const HostSequence& seq, int k_or_v, int position, int dim, float value) {
    const int page = seq.pages[static_cast<size_t>(position / geometry.block_tokens)];
    pool[page * geometry.page_elements() + geometry.offset(0, k_or_v, 0, position % 4, dim)] = float_to_bf16(value);
  }
};

TEST(ModelReference, AttentionIsCausalAndAveragesEqualScores) {
  TinyCache cache;
  const HostSequence seq{.new_tokens = 2, .context_tokens = 3, .pages = {5, 2}};
  // Keys all zero, so every visible key scores the same; V of position p is p + 1 in dimension 0.
  for (int p = 0; p < 5; ++p) cache.set(seq, 1, p, 0, static_cast<float>(p + 1));
  std::vector<uint16_t> q(2 * 64, float_to_bf16(1.0f));
  const auto out = attention_reference(q, std::span(&seq, 1), 1, cache.pool, cache.geometry.page_elements(),
                                       cache.geometry, 0, 0.125);
  EXPECT_DOUBLE_EQ(out[0], (1 + 2 + 3 + 4) / 4.0);       // position 3 sees keys 0..3
  EXPECT_DOUBLE_EQ(out[64], (1 + 2 + 3 + 4 + 5) / 5.0);  // position 4 sees keys 0..4
}

TEST(ModelReference, AttentionWeightsBySoftmaxOfScaledScores) {
  TinyCache cache;
  const HostSequence seq{.new_tokens = 1, .context_tokens = 1, .pages = {7}};
  cache.set(seq, 0, 1, 0, 2.0f);  // key 1 scores q . k = 2 * 2 = 4, times scale 0.5 = 2; key 0 scores 0
  cache.set(seq, 1, 0, 1, 1.0f);
  cache.set(seq, 1, 1, 1, 3.0f);
  std::vector<uint16_t> q(64, 0);
  q[0] = float_to_bf16(2.0f);
  const auto out = attention_reference(q, std::span(&seq, 1), 1, cache.pool, cache.geometry.page_elements(),
                                       cache.geometry, 0, 0.5);
  const double w1 = std::exp(2.0) / (1 + std::exp(2.0));
  EXPECT_NEAR(out[1], (1 - w1) * 1 + w1 * 3, 1e-12);
}

TEST(AttentionPlan, SplitsOnlyWhenTheGridIsSmall) {
  // Prefill of 4096 tokens, 8 KV heads, ratio 4: 32 tokens a tile, 128 tiles x 8 heads = 1024 blocks.
  EXPECT_EQ(attention_splits(1, 4096, 4096, 8, 4, 132), 1);
  // Decode over 32768 keys: 8 blocks; 264 / 8 = 33 splits (32768 / 256 = 128 allowed).
  EXPECT_EQ(attention_splits(1, 1, 32768, 8, 4, 132), 33);
  // Short context: no range under four 64-key tiles (1000 / 256 = 3).
  EXPECT_EQ(attention_splits(1, 1, 1000, 8, 4, 132), 3);
  EXPECT_EQ(attention_splits(1, 1, 100, 8, 4, 132), 1);
}

TEST(AttentionPlan, SplitRangesAreWholeTilesCoveringTheKeys) {
  // 1000 keys = 16 tiles; 3 splits of 6 tiles (384 keys) start at 0, 384, 768.
  EXPECT_EQ(attention_split_begin(1000, 3, 1), 384);
  EXPECT_EQ(attention_split_begin(1000, 3, 2), 768);
  EXPECT_GE(attention_split_begin(1000, 3, 3), 1000);
  EXPECT_EQ(attention_tokens_per_tile(4), 32);
  EXPECT_EQ(attention_query_tiles(4097, 4), 129);
}

TEST(TransformerShape, FlopsOfLlama8B) {
  const TransformerShape s = llama_3_1_8b_shape();
  // QKV 4096 x 6144, output 4096 x 4096, gate/up 4096 x 28672, down 14336 x 4096.
  EXPECT_EQ(s.linear_params_per_layer(), 4096LL * 6144 + 4096LL * 4096 + 4096LL * 28672 + 14336LL * 4096);
  // Four queries, no context: 1 + 2 + 3 + 4 = 10 (query, key) pairs, 4 * 128 FLOPs per pair and head.
  EXPECT_DOUBLE_EQ(attention_flops(s, 4, 0), 10.0 * 4 * 32 * 128);
  TransformerShape bad = s;
  bad.kv_heads = 5;
  EXPECT_THROW(bad.validate(), std::invalid_argument);
}

}  // namespace
}  // namespace kvtier::hw
