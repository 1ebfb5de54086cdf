// The forward pass end to end on a small model: a prompt run in one step and the same prompt run in two
// chunks (the second attending to the first through the paged cache) must give the same logits, up to bf16
// rounding; decode steps after it must give finite logits. Skips where no GPU is visible.
#include "hw/model/forward.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <optional>
#include <vector>

#include "hw/gpu/check.h"
#include "hw/model/attention.h"
#include "hw/kernels/quant_math.h"

namespace kvtier::hw {
namespace {

class ForwardGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (gpu::visible_device_count() == 0) GTEST_SKIP() << "no GPU visible: the forward pass tests need a device";
  }
};

ForwardConfig small_config() {
  ForwardConfig config;
  config.shape = {.layers = 3, .hidden = 256, .heads = 8, .kv_heads = 2, .head_dim = 64, .intermediate = 512,
                  .vocab = 1000, .rms_eps = 1e-5f, .rope_theta = 10000.0f};
  config.block_tokens = 16;
  config.kv_pages = 64;
  config.max_step_tokens = 512;
  config.max_sequences = 4;
  config.max_pages_per_sequence = 32;
  return config;
}

std::vector<double> logits_of(const TransformerForward& forward, int sequences) {
  const int vocab = forward.config().shape.vocab;
  std::vector<uint16_t> bits(static_cast<size_t>(sequences) * vocab);
  KVTIER_GPU_CHECK(gpuDeviceSynchronize());
  KVTIER_GPU_CHECK(gpuMemcpy(bits.data(), forward.logits(), bits.size() * 2, gpuMemcpyDeviceToHost));
  std::vector<double> out;
  for (uint16_t b : bits) out.push_back(bf16_to_float(b));
  return out;
}

TEST_F(ForwardGpu, ChunkedPrefillMatchesOneStepAndDecodeFollows) {
  TransformerForward forward(small_config(), nullptr);
  std::vector<int> tokens(200);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int>(i * 37 % 1000);
  std::vector<int> pages(13);
  std::iota(pages.begin(), pages.end(), 20);
  std::reverse(pages.begin(), pages.end());  // scattered, descending

  // A second sequence in the same step keeps the batch ragged.
  const HostSequence whole{200, 0, pages};
  const HostSequence other{30, 0, {1, 2}};
  std::vector<int> both_tokens = tokens;
  both_tokens.insert(both_tokens.end(), tokens.begin(), tokens.begin() + 30);
  forward.step(std::vector<HostSequence>{whole, other}, both_tokens);
  const auto one_step = logits_of(forward, 2);

  forward.step(std::vector<HostSequence>{{120, 0, pages}}, std::span(tokens).first(120));
  forward.step(std::vector<HostSequence>{{80, 120, pages}}, std::span(tokens).subspan(120));
  const auto chunked = logits_of(forward, 1);

  double error_squares = 0, squares = 0;
  for (size_t i = 0; i < chunked.size(); ++i) {
    ASSERT_TRUE(std::isfinite(one_step[i]) && std::isfinite(chunked[i])) << "logit " << i;
    error_squares += (one_step[i] - chunked[i]) * (one_step[i] - chunked[i]);
    squares += one_step[i] * one_step[i];
  }
  ASSERT_GT(squares, 0);
  EXPECT_LT(std::sqrt(error_squares / squares), 3e-2);

  forward.step(std::vector<HostSequence>{{1, 200, pages}, {1, 30, {1, 2, 3}}}, std::vector<int>{5, 6});
  for (double logit : logits_of(forward, 2)) ASSERT_TRUE(std::isfinite(logit));
}

TEST_F(ForwardGpu, AttentionAloneTakesTheStepsBatchAndItsChecks) {
  TransformerForward forward(small_config(), nullptr);
  std::vector<int> prefill_pages(13), decode_pages(19);
  std::iota(prefill_pages.begin(), prefill_pages.end(), 0);
  std::iota(decode_pages.begin(), decode_pages.end(), 13);
  const std::vector<HostSequence> batch{{200, 0, prefill_pages}, {1, 300, decode_pages}};
  forward.step(batch, std::vector<int>(201, 3));
  forward.attention(batch);
  KVTIER_GPU_CHECK(gpuDeviceSynchronize());
  EXPECT_THROW(forward.attention(std::vector<HostSequence>{{40, 0, {1, 2}}}), std::invalid_argument);
}

TEST_F(ForwardGpu, TheAttentionTilingIsTheDevicesAndTheKernels) {
  const std::optional<AttentionCosts> tiling = paged_attention_tiling(128, 32, 8, 256);
  ASSERT_TRUE(tiling);
  int multiprocessors = 0;
  KVTIER_GPU_CHECK(gpuDeviceGetAttribute(&multiprocessors, gpuDevAttrMultiProcessorCount, 0));
  EXPECT_EQ(tiling->multiprocessors, multiprocessors);
  EXPECT_EQ(tiling->query_rows, kAttentionRows);
  EXPECT_EQ(tiling->split.key_tile, kAttentionKeys);
  EXPECT_GE(tiling->split.slots, multiprocessors);
  EXPECT_EQ(tiling->unsplit.key_tile, attention_uses_wgmma(128, 32, 8, 256, 1, kAttentionRows) ? 128 : kAttentionKeys);
  EXPECT_GE(tiling->unsplit.slots, multiprocessors);
}

TEST_F(ForwardGpu, RejectsAStepWithoutEnoughPages) {
  TransformerForward forward(small_config(), nullptr);
  EXPECT_THROW(forward.step(std::vector<HostSequence>{{40, 0, {1, 2}}}, std::vector<int>(40, 1)),
               std::invalid_argument);
}

}  // namespace
}  // namespace kvtier::hw
