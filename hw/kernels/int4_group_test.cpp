#include "hw/kernels/int4_group.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

#include "sim/core/kv_layout.h"
#include "hw/kernels/quant_math.h"

namespace kvtier::hw {
namespace {

Encoding int4_encoding(int group_size) {
  Encoding e;
  e.kind = EncodingKind::kInt4Group;
  e.group_size = group_size;
  return e;
}

TEST(Int4GroupRecord, SizeMatchesKvLayoutArithmetic) {
  // 128 elements: 64 bytes of nibbles plus 4 bytes (fp16 scale + zero) per group.
  EXPECT_EQ(int4_group_params(128, int4_encoding(32)).record_bytes(), 64 + 4 * 4);
  EXPECT_EQ(int4_group_params(128, int4_encoding(128)).record_bytes(), 64 + 4);
}

TEST(Int4GroupRecord, EncodesAnExactGridAsHandComputed) {
  // Values 0..15 then 15..0: min 0, max 15, so scale 1 and zero 0, and every value is its own nibble.
  Int4GroupParams params = int4_group_params(32, int4_encoding(32));
  std::vector<uint16_t> x(32);
  for (int i = 0; i < 32; ++i) x[i] = float_to_bf16(static_cast<float>(i < 16 ? i : 31 - i));
  std::vector<uint8_t> record(params.record_bytes());
  int4_group_quantize_reference(params, x, record);
  EXPECT_EQ(record[0], 0x10);  // elements 0 (low nibble) and 1 (high nibble)
  EXPECT_EQ(record[7], 0xfe);
  EXPECT_EQ(record[8], 0xef);
  EXPECT_EQ(record[16], 0x00);  // scale fp16 1.0 = 0x3c00, little-endian
  EXPECT_EQ(record[17], 0x3c);
  EXPECT_EQ(record[18], 0x00);  // zero 0.0
  EXPECT_EQ(record[19], 0x00);
  std::vector<uint16_t> back(32);
  int4_group_dequantize_reference(params, record, back);
  EXPECT_EQ(back, x);
}

TEST(Int4GroupRoundTrip, ErrorIsWithinHalfAStepPerGroup) {
  Int4GroupParams params = int4_group_params(128, int4_encoding(32));
  const int rows = 500;
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.5f, 2.0f);
  std::vector<uint16_t> x(static_cast<size_t>(rows) * 128);
  for (uint16_t& v : x) v = float_to_bf16(normal(rng));
  std::vector<uint8_t> records(static_cast<size_t>(rows) * params.record_bytes());
  int4_group_quantize_reference(params, x, records);
  std::vector<uint16_t> back(x.size());
  int4_group_dequantize_reference(params, records, back);
  for (size_t g = 0; g < x.size() / 32; ++g) {
    float lo = INFINITY, hi = -INFINITY;
    for (size_t i = g * 32; i < g * 32 + 32; ++i) {
      lo = std::fmin(lo, bf16_to_float(x[i]));
      hi = std::fmax(hi, bf16_to_float(x[i]));
    }
    // Half a step, plus the fp16 rounding of scale and zero and the bf16 rounding of the output.
    float bound = (hi - lo) / 15 * 0.5f * 1.01f + 0.01f * std::fmax(std::fabs(lo), std::fabs(hi));
    for (size_t i = g * 32; i < g * 32 + 32; ++i) {
      ASSERT_LE(std::fabs(bf16_to_float(x[i]) - bf16_to_float(back[i])), bound) << "element " << i;
    }
  }
}

TEST(Int4GroupParams, RejectsEncodingsTheKernelsDoNotImplement) {
  Encoding no_zero = int4_encoding(32);
  no_zero.zero_point = false;
  EXPECT_THROW(int4_group_params(128, no_zero), std::invalid_argument);
  EXPECT_THROW(int4_group_params(128, int4_encoding(48)), std::invalid_argument);
  EXPECT_THROW(int4_group_params(96, int4_encoding(64)), std::invalid_argument);
  Encoding fp8;
  fp8.kind = EncodingKind::kFp8;
  EXPECT_THROW(int4_group_params(128, fp8), std::invalid_argument);
}

}  // namespace
}  // namespace kvtier::hw
