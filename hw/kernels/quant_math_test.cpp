#include "hw/kernels/quant_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

namespace kvtier::hw {
namespace {

TEST(Fp16Conversion, MatchesKnownBitPatterns) {
  EXPECT_EQ(float_to_fp16(1.0f), 0x3c00);
  EXPECT_EQ(float_to_fp16(-2.0f), 0xc000);
  EXPECT_EQ(float_to_fp16(0.1f), 0x2e66);
  EXPECT_EQ(float_to_fp16(-0.0f), 0x8000);
  EXPECT_EQ(float_to_fp16(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_fp16(std::ldexp(1.0f, -24)), 0x0001);         // smallest subnormal
  EXPECT_EQ(float_to_fp16(std::ldexp(1.0f, -25)), 0x0000);         // a tie rounds to even
  EXPECT_EQ(float_to_fp16(std::ldexp(3.0f, -25)), 0x0002);         // 1.5 ulp rounds up to even
  EXPECT_EQ(float_to_fp16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie below an even mantissa
  EXPECT_EQ(float_to_fp16(std::numeric_limits<float>::quiet_NaN()), 0x7e00);
  EXPECT_EQ(float_to_fp16(-std::numeric_limits<float>::quiet_NaN()), 0x7e00);  // canonical: no sign
}

TEST(Fp16Conversion, SaturatesInsteadOfOverflowing) {
  EXPECT_EQ(float_to_fp16(1e6f), 0x7bff);
  EXPECT_EQ(float_to_fp16(-std::numeric_limits<float>::infinity()), 0xfbff);
}

TEST(Fp16Conversion, EveryFiniteHalfRoundTrips) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00) == 0x7c00) continue;  // inf and NaN
    ASSERT_EQ(float_to_fp16(fp16_to_float(static_cast<uint16_t>(h))), h) << std::hex << h;
  }
  EXPECT_EQ(fp16_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(fp16_to_float(0x7bff), 65504.0f);
  EXPECT_TRUE(std::isinf(fp16_to_float(0x7c00)));
}

#if defined(__FLT16_MAX__) && !defined(__clang__)
// The compiler's own _Float16 conversion (round to nearest even) is an independent reference.
TEST(Fp16Conversion, AgreesWithCompilerFloat16BelowSaturation) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> bits;
  for (int i = 0; i < 200000; ++i) {
    float f = bits_float(bits(rng));
    if (!std::isfinite(f) || std::fabs(f) >= 65504.0f) continue;
    _Float16 h = static_cast<_Float16>(f);
    uint16_t expected;
    std::memcpy(&expected, &h, 2);
    ASSERT_EQ(float_to_fp16(f), expected) << f;
  }
}
#endif

TEST(Bf16Conversion, RoundsToNearestEven) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);  // tie, even stays
  EXPECT_EQ(float_to_bf16(1.0f + std::ldexp(3.0f, -8)), 0x3f82);  // tie, odd rounds up
  EXPECT_EQ(float_to_bf16(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)), 0x3f81);
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::quiet_NaN()), 0x7fc0);
  EXPECT_EQ(float_to_bf16(-std::numeric_limits<float>::quiet_NaN()), 0x7fc0);  // canonical: no sign
  EXPECT_EQ(float_to_bf16(bits_float(0x7f800001u)), 0x7fc0);                   // nor payload
}

TEST(Bf16Conversion, EveryBf16RoundTrips) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7f80) == 0x7f80 && (h & 0x7f) != 0) continue;  // NaNs become the canonical one
    ASSERT_EQ(float_to_bf16(bf16_to_float(static_cast<uint16_t>(h))), h) << std::hex << h;
  }
}

TEST(CodebookIndex, CountsBoundariesStrictlyBelow) {
  float boundaries[15];
  for (int i = 0; i < 15; ++i) boundaries[i] = static_cast<float>(i - 7);  // -7 .. 7
  EXPECT_EQ(codebook_index(boundaries, -100.0f), 0u);
  EXPECT_EQ(codebook_index(boundaries, 100.0f), 15u);
  EXPECT_EQ(codebook_index(boundaries, 0.0f), 7u);  // on a boundary: the lower cell
  EXPECT_EQ(codebook_index(boundaries, 0.5f), 8u);
  EXPECT_EQ(codebook_index(boundaries, -6.5f), 1u);
}

TEST(Bounds, SkipEveryNaNAndKeepOneZero) {
  float lo = INFINITY, hi = -INFINITY;
  const float signalling_nan = bits_float(0x7f800001u), quiet_nan = std::numeric_limits<float>::quiet_NaN();
  for (float x : {2.0f, signalling_nan, -1.0f, quiet_nan, 0.5f}) widen_bounds(x, lo, hi);
  EXPECT_EQ(lo, -1.0f);
  EXPECT_EQ(hi, 2.0f);
  EXPECT_EQ(float_bits(canonical_zero(-0.0f)), 0u);
  EXPECT_EQ(canonical_zero(-3.0f), -3.0f);
}

TEST(AffineNibble, RoundsAndClamps) {
  EXPECT_EQ(affine_nibble(0.0f, 0.0f, 1.0f), 0u);
  EXPECT_EQ(affine_nibble(2.49f, 0.0f, 1.0f), 2u);
  EXPECT_EQ(affine_nibble(2.5f, 0.0f, 1.0f), 3u);  // halves round up
  EXPECT_EQ(affine_nibble(99.0f, 0.0f, 1.0f), 15u);
  EXPECT_EQ(affine_nibble(1e20f, 0.0f, 1.0f), 15u);  // far past what an integer conversion holds
  EXPECT_EQ(affine_nibble(std::numeric_limits<float>::infinity(), 0.0f, 1.0f), 15u);
  EXPECT_EQ(affine_nibble(-1.0f, 0.0f, 1.0f), 0u);
  EXPECT_EQ(affine_nibble(5.0f, 5.0f, inverse_scale(0.0f)), 0u);  // constant group
  EXPECT_EQ(affine_nibble(0.75f, 0.0f, inverse_scale(0.25f)), 3u);
  EXPECT_EQ(affine_value(3, 1.0f, 0.5f), 2.5f);
}

}  // namespace
}  // namespace kvtier::hw
