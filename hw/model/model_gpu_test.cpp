// The model's GPU kernels against the CPU references of model_reference.h. Skips where no GPU is visible.
//
// Tolerances follow from bf16: attention rounds the softmax weights to bf16 before multiplying by V (a
// relative error of at most 2^-9 per weight) and its output to bf16 (2^-9 relative), so with V in [-1, 1]
// an output is off by at most about 2^-9 + 2^-9 < 4e-3; the tests allow 1e-2 absolute. Elementwise kernels
// compute in float and round once: at most one bf16 step (2^-8 relative) from the double reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>
#include <vector>

#include "hw/model/attention.h"
#include "hw/model/attention_hopper.h"
#include "hw/model/attention_plan.h"
#include "hw/model/elementwise.h"
#include "hw/gpu/check.h"
#include "hw/gpu/device_buffer.h"
#include "hw/model/model_reference.h"
#include "hw/kernels/quant_math.h"

namespace kvtier::hw {
namespace {

using gpu::DeviceBuffer;

class ModelGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (gpu::visible_device_count() == 0) GTEST_SKIP() << "no GPU visible: the model kernel tests need a device";
  }
};

template <typename T>
DeviceBuffer<T> to_device(const std::vector<T>& host) {
  DeviceBuffer<T> buffer(std::max<size_t>(host.size(), 1));
  if (!host.empty()) buffer.upload(host.data(), host.size());
  return buffer;
}

template <typename T>
std::vector<T> to_host(const DeviceBuffer<T>& buffer, size_t count) {
  std::vector<T> host(count);
  buffer.download(host.data(), count);
  return host;
}

std::vector<uint16_t> random_bf16(size_t count, float scale, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-scale, scale);
  std::vector<uint16_t> out(count);
  for (auto& v : out) v = float_to_bf16(uniform(rng));
  return out;
}

// Sequences with (new tokens, context) and pages drawn at random from a shuffled pool.
struct Batch {
  std::vector<HostSequence> sequences;
  int pool_pages = 0;
  int table_stride = 0;
  DeviceBuffer<int> ints;
  StepBatch device;

  Batch(const std::vector<std::pair<int, int>>& shapes, int block_tokens, uint32_t seed) {
    for (auto [fresh, context] : shapes) {
      const int pages = (fresh + context + block_tokens - 1) / block_tokens;
      sequences.push_back({fresh, context, std::vector<int>(static_cast<size_t>(pages))});
      pool_pages += pages;
      table_stride = std::max(table_stride, pages);
    }
    pool_pages += 3;  // pages no sequence uses
    std::vector<int> ids(static_cast<size_t>(pool_pages));
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin(), ids.end(), std::mt19937(seed));
    size_t next = 0;
    std::vector<int> host(1, 0), context, table;
    for (auto& seq : sequences) {
      for (int& page : seq.pages) page = ids[next++];
      host.push_back(host.back() + seq.new_tokens);
      context.push_back(seq.context_tokens);
      std::vector<int> row(static_cast<size_t>(table_stride), -1);
      std::copy(seq.pages.begin(), seq.pages.end(), row.begin());
      table.insert(table.end(), row.begin(), row.end());
      device.max_new_tokens = std::max(device.max_new_tokens, seq.new_tokens);
      device.max_total_tokens = std::max(device.max_total_tokens, seq.new_tokens + seq.context_tokens);
    }
    const int count = static_cast<int>(sequences.size());
    device.total_new_tokens = host.back();
    host.insert(host.end(), context.begin(), context.end());
    host.insert(host.end(), table.begin(), table.end());
    ints = to_device(host);
    device.sequences = count;
    device.query_start = ints.data();
    device.context_tokens = ints.data() + count + 1;
    device.block_table = ints.data() + 2 * count + 1;
    device.block_table_stride = table_stride;
  }
};

struct AttentionCase {
  int head_dim, kv_heads, ratio, block_tokens;
};

struct AttentionRun {
  int rows, splits;
  AttentionKernel kernel;
};

// Writes NaNs into the slots of each sequence's last page past its last key, in every layer, as stale
// data of an earlier page owner could be: a kernel must not let them reach an output (0 x NaN is NaN).
void poison_stale_slots(std::vector<uint16_t>& pool, const Batch& batch, const KvPageGeometry& geometry,
                        int64_t page_stride) {
  constexpr uint16_t kNan = 0x7fc0;
  for (const HostSequence& seq : batch.sequences) {
    const int keys = seq.context_tokens + seq.new_tokens;
    if (seq.pages.empty() || keys % geometry.block_tokens == 0) continue;
    for (int layer = 0; layer < geometry.layers_in_group; ++layer) {
      for (int k_or_v = 0; k_or_v < 2; ++k_or_v) {
        for (int head = 0; head < geometry.kv_heads; ++head) {
          for (int slot = keys % geometry.block_tokens; slot < geometry.block_tokens; ++slot) {
            for (int dim = 0; dim < geometry.head_dim; ++dim) {
              pool[static_cast<size_t>(seq.pages.back() * page_stride + geometry.offset(layer, k_or_v, head, slot, dim))] = kNan;
            }
          }
        }
      }
    }
  }
}

// Runs paged_attention on `batch` over random pages (NaNs past each sequence's keys) and Q for each run,
// checking every output against the double-precision reference.
void expect_attention_matches(const AttentionCase& c, Batch& batch, const std::vector<AttentionRun>& runs) {
  const int heads = c.kv_heads * c.ratio, layers = 2, layer = 1;
  const KvPageGeometry geometry{layers, c.kv_heads, c.head_dim, c.block_tokens};
  const int64_t page_stride = geometry.page_elements() + 8;  // padded like an allocator would
  auto pool = random_bf16(static_cast<size_t>(page_stride * batch.pool_pages), 1.0f, 11);
  poison_stale_slots(pool, batch, geometry, page_stride);
  const int tokens = batch.device.total_new_tokens;
  const auto q = random_bf16(static_cast<size_t>(tokens) * heads * c.head_dim, 4.0f, 12);
  const double scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim));
  const auto expected = attention_reference(q, batch.sequences, heads, pool, page_stride, geometry, layer, scale);

  auto pool_device = to_device(pool);
  auto q_device = to_device(q);
  const PagedKvLayer kv = paged_kv_layer(pool_device.data(), page_stride, geometry, layer);
  for (const AttentionRun& run : runs) {
    const auto [rows, splits, kernel] = run;
    const char* name = kernel == AttentionKernel::kAuto && attention_uses_wgmma(c.head_dim, heads, c.kv_heads, c.block_tokens, splits, rows)
                           ? "wgmma"
                           : "mma.sync";
    DeviceBuffer<uint16_t> out(q.size());
    KVTIER_GPU_CHECK(gpuMemset(out.data(), 0xff, out.bytes()));  // NaN: every element must be written
    DeviceBuffer<float> workspace(
        static_cast<size_t>(std::max<int64_t>(1, attention_workspace_floats(tokens, heads, c.head_dim, splits))));
    paged_attention(batch.device, kv, q_device.data(), out.data(), heads, static_cast<float>(scale), splits,
                    workspace.data(), nullptr, rows, kernel);
    const auto got = to_host(out, q.size());
    double worst = 0, error_squares = 0, reference_squares = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      const double value = bf16_to_float(got[i]);
      ASSERT_TRUE(std::isfinite(value)) << "element " << i << " not written (" << name << ", rows " << rows
                                        << ", splits " << splits << ")";
      worst = std::max(worst, std::abs(value - expected[i]));
      error_squares += (value - expected[i]) * (value - expected[i]);
      reference_squares += expected[i] * expected[i];
    }
    EXPECT_LT(worst, 1e-2) << name << ", rows " << rows << ", splits " << splits;
    EXPECT_LT(std::sqrt(error_squares / reference_squares), 1e-2) << name << ", rows " << rows << ", splits " << splits;
  }
}

std::string case_name(const AttentionCase& c) {
  char name[64];
  std::snprintf(name, sizeof(name), "d%d_kv%d_ratio%d_block%d", c.head_dim, c.kv_heads, c.ratio, c.block_tokens);
  return name;
}

class PagedAttention : public ModelGpu, public ::testing::WithParamInterface<AttentionCase> {};

TEST_P(PagedAttention, MatchesTheReferenceOnRaggedBatches) {
  // Prefill chunks after ragged contexts, whole prompts, and decode steps in one batch.
  Batch batch({{1, 0}, {300, 37}, {77, 129}, {1, 1000}, {130, 0}, {1, 63}}, GetParam().block_tokens, 7);
  expect_attention_matches(GetParam(), batch,
                           {{128, 1, AttentionKernel::kAuto},
                            {128, 1, AttentionKernel::kMmaSync},
                            {128, 3, AttentionKernel::kAuto},
                            {128, 8, AttentionKernel::kAuto},
                            {64, 1, AttentionKernel::kAuto},
                            {64, 5, AttentionKernel::kAuto}});
}

INSTANTIATE_TEST_SUITE_P(Shapes, PagedAttention,
                         ::testing::Values(AttentionCase{128, 2, 4, 16}, AttentionCase{128, 1, 8, 48},
                                           AttentionCase{128, 3, 1, 64}, AttentionCase{64, 2, 4, 16},
                                           AttentionCase{64, 1, 8, 7}, AttentionCase{64, 2, 1, 256},
                                           AttentionCase{128, 1, 6, 16}),
                         [](const auto& info) { return case_name(info.param); });

// The Hopper kernel's tiling edges: several 128-key tiles per block, contexts and new tokens that are not
// multiples of the key tile (128) or of a block's tokens (128 / ratio), the causal diagonal inside a key
// tile, sequences shorter than one tile, and both consumer warpgroups' rows partly past the last token.
class HopperAttention : public ModelGpu, public ::testing::WithParamInterface<AttentionCase> {};

TEST_P(HopperAttention, MatchesTheReferenceAcrossTileEdges) {
  const AttentionCase c = GetParam();
  if (!attention_uses_wgmma(c.head_dim, c.kv_heads * c.ratio, c.kv_heads, c.block_tokens, 1, 128)) {
    GTEST_SKIP() << "the Hopper attention kernel does not run on this device";
  }
  Batch batch({{1000, 0}, {513, 700}, {64, 64}, {129, 0}, {255, 1}, {33, 127}, {1, 300}}, c.block_tokens, 5);
  expect_attention_matches(c, batch, {{128, 1, AttentionKernel::kAuto}});
}

INSTANTIATE_TEST_SUITE_P(Shapes, HopperAttention,
                         ::testing::Values(AttentionCase{128, 2, 4, 16}, AttentionCase{128, 1, 8, 256},
                                           AttentionCase{128, 2, 1, 64}, AttentionCase{128, 1, 6, 48},
                                           AttentionCase{128, 1, 4, 7}, AttentionCase{128, 1, 16, 16},
                                           AttentionCase{128, 2, 4, 4}, AttentionCase{128, 1, 8, 5},
                                           AttentionCase{128, 2, 2, 8}, AttentionCase{128, 1, 4, 24}),
                         [](const auto& info) { return case_name(info.param); });

// The tensor-copy engine takes pools it can read in whole 8-row swizzle atoms of one page, with 16-byte
// aligned rows; the largest power of two dividing the page size (at most a 128-key tile) is its box.
TEST(HopperTensorCopy, BoxRowsFollowThePageSizeAndTheAlignment) {
  auto box_rows = [](int block_tokens, int head_dim = 128, int64_t stride_padding = 8, uintptr_t pool = 4096) {
    const KvPageGeometry geometry{2, 8, head_dim, block_tokens};
    return hopper_tma_box_rows(paged_kv_layer(reinterpret_cast<uint16_t*>(pool),
                                              geometry.page_elements() + stride_padding, geometry, 1));
  };
  EXPECT_EQ(box_rows(8), 8);
  EXPECT_EQ(box_rows(16), 16);
  EXPECT_EQ(box_rows(24), 8);
  EXPECT_EQ(box_rows(48), 16);
  EXPECT_EQ(box_rows(64), 64);
  EXPECT_EQ(box_rows(128), 128);
  EXPECT_EQ(box_rows(256), 128);
  EXPECT_EQ(box_rows(4), 0);
  EXPECT_EQ(box_rows(5), 0);
  EXPECT_EQ(box_rows(7), 0);
  EXPECT_EQ(box_rows(12), 0);
  EXPECT_EQ(box_rows(16, 64), 0);
  EXPECT_EQ(box_rows(16, 128, 4), 0);        // page stride of 8 bytes past a multiple of 16
  EXPECT_EQ(box_rows(16, 128, 8, 4104), 0);  // pool 8 bytes past a 16-byte boundary
}

// On an H100/H200 the prefill shapes of Llama-3.1-8B must take the Hopper kernel, decode splits must not.
TEST_F(ModelGpu, HopperKernelServesUnsplitHeadDim128OnComputeCapability90) {
  gpuDeviceProp properties{};
  KVTIER_GPU_CHECK(gpuGetDeviceProperties(&properties, 0));
  if (properties.major != 9 || properties.minor != 0) GTEST_SKIP() << "not compute capability 9.0";
  EXPECT_TRUE(attention_uses_wgmma(128, 32, 8, 16, 1, 128));
  EXPECT_TRUE(attention_uses_wgmma(128, 32, 8, 4, 1, 128));
  EXPECT_FALSE(attention_uses_wgmma(128, 32, 8, 3, 1, 128));
  EXPECT_FALSE(attention_uses_wgmma(128, 32, 8, 16, 4, 128));
  EXPECT_FALSE(attention_uses_wgmma(64, 32, 8, 16, 1, 128));
  EXPECT_FALSE(attention_uses_wgmma(128, 32, 8, 16, 1, 64));
}

double bf16_step(double value) { return std::max(std::abs(value) / 128.0, 1e-6); }

TEST_F(ModelGpu, RopeAndCacheMatchTheReference) {
  for (int head_dim : {64, 128}) {
    TransformerShape shape{.layers = 3, .hidden = 256, .heads = 8, .kv_heads = 2, .head_dim = head_dim,
                           .intermediate = 512, .vocab = 16, .rms_eps = 1e-5f, .rope_theta = 500000.0f};
    Batch batch({{5, 0}, {40, 21}, {1, 300}}, 16, 3);
    const KvPageGeometry geometry{shape.layers, shape.kv_heads, head_dim, 16};
    const int64_t page_stride = geometry.page_elements();
    const int tokens = batch.device.total_new_tokens;
    const auto qkv = random_bf16(static_cast<size_t>(tokens) * shape.qkv_width(), 2.0f, 5);
    auto pool = random_bf16(static_cast<size_t>(page_stride * batch.pool_pages), 1.0f, 6);
    auto pool_device = to_device(pool);
    auto qkv_device = to_device(qkv);
    DeviceBuffer<uint16_t> q_device(static_cast<size_t>(tokens) * shape.q_width());
    const int layer = 2;
    rope_and_cache(qkv_device.data(), batch.device, shape,
                   paged_kv_layer(pool_device.data(), page_stride, geometry, layer), q_device.data(), nullptr);
    std::vector<uint16_t> q(q_device.size());
    rope_and_cache_reference(qkv, batch.sequences, shape, q, pool, page_stride, geometry, layer);
    const auto got_q = to_host(q_device, q.size());
    const auto got_pool = to_host(pool_device, pool.size());
    // The kernel's angle is a float product (pos * theta^(-2i/d), the power by exp2f): off by up to
    // 320 * 1.4e-6 rad at these positions, so a rotated value may move by 1e-3 of an input of size 2 on top
    // of its bf16 rounding, which matters where the rotation nearly cancels.
    for (size_t i = 0; i < q.size(); ++i) {
      ASSERT_NEAR(bf16_to_float(got_q[i]), bf16_to_float(q[i]), bf16_step(bf16_to_float(q[i])) + 1e-3) << "q " << i;
    }
    // Every pool element: written K/V within that bound (V exactly), everything else untouched.
    for (size_t i = 0; i < pool.size(); ++i) {
      ASSERT_NEAR(bf16_to_float(got_pool[i]), bf16_to_float(pool[i]), bf16_step(bf16_to_float(pool[i])) + 1e-3)
          << "pool element " << i << ", head_dim " << head_dim;
    }
  }
}

TEST_F(ModelGpu, RmsnormGathersRowsAndMatchesTheReference) {
  const int width = 4096, rows = 5;
  const auto x = random_bf16(static_cast<size_t>(rows) * width, 3.0f, 8);
  const auto weight = random_bf16(width, 1.0f, 9);
  const std::vector<int> picked = {4, 0, 2};
  auto x_device = to_device(x);
  auto weight_device = to_device(weight);
  auto picked_device = to_device(picked);
  DeviceBuffer<uint16_t> out(picked.size() * width);
  rmsnorm(x_device.data(), weight_device.data(), out.data(), 3, width, 1e-5f, picked_device.data(), nullptr);
  const auto got = to_host(out, out.size());
  const auto expected = rmsnorm_reference(x, weight, width, 1e-5f);
  for (size_t r = 0; r < picked.size(); ++r) {
    for (int i = 0; i < width; ++i) {
      const double want = expected[static_cast<size_t>(picked[r]) * width + i];
      ASSERT_NEAR(bf16_to_float(got[r * width + i]), want, bf16_step(want)) << "row " << r << " element " << i;
    }
  }
}

TEST_F(ModelGpu, SiluMulMatchesTheReference) {
  const int width = 1000, rows = 7;
  const auto gate_up = random_bf16(static_cast<size_t>(rows) * 2 * width, 6.0f, 10);
  auto in = to_device(gate_up);
  DeviceBuffer<uint16_t> out(static_cast<size_t>(rows) * width);
  silu_mul(in.data(), out.data(), rows, width, nullptr);
  const auto got = to_host(out, out.size());
  const auto expected = silu_mul_reference(gate_up, width);
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(bf16_to_float(got[i]), expected[i], bf16_step(expected[i])) << "element " << i;
  }
}

TEST_F(ModelGpu, FillRandomStaysInRangeAndIsNotConstant) {
  DeviceBuffer<uint16_t> data(100000);
  fill_random(data.data(), 100000, 42, 0.5f, 1.0f, nullptr);
  const auto got = to_host(data, data.size());
  double sum = 0;
  for (uint16_t v : got) {
    const double value = bf16_to_float(v);
    ASSERT_GE(value, 0.5);
    ASSERT_LE(value, 1.5);
    sum += value;
  }
  EXPECT_NEAR(sum / 100000, 1.0, 0.01);
  EXPECT_NE(got[0], got[1]);
}

}  // namespace
}  // namespace kvtier::hw
