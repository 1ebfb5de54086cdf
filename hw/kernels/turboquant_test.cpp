#include "hw/kernels/turboquant.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

#include "hw/kernels/quant_math.h"

namespace kvtier::hw {
namespace {

std::vector<uint16_t> gaussian_bf16(size_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<uint16_t> out(count);
  for (uint16_t& x : out) x = float_to_bf16(normal(rng));
  return out;
}

double relative_mse(const std::vector<uint16_t>& a, const std::vector<uint16_t>& b) {
  double error = 0, energy = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    double x = bf16_to_float(a[i]), y = bf16_to_float(b[i]);
    error += (x - y) * (x - y);
    energy += x * x;
  }
  return error / energy;
}

TEST(TurboQuantCodebook, MatchesMaxsPublishedSixteenLevelQuantizer) {
  // J. Max, "Quantizing for minimum distortion" (1960), 16-level Gaussian output levels.
  const double published[8] = {0.1284, 0.3881, 0.6568, 0.9424, 1.2562, 1.6181, 2.0690, 2.7326};
  const TurboQuantCodebook& book = gaussian_codebook();
  for (int i = 0; i < 8; ++i) {
    EXPECT_NEAR(book.centroids[8 + i], published[i], 1e-3);
    EXPECT_NEAR(book.centroids[7 - i], -published[i], 1e-3);
  }
  EXPECT_NEAR(book.boundaries[7], 0.0, 1e-6);
}

TEST(TurboQuantSlot, MatchesKvLayoutSizeAndFieldOrder) {
  TurboQuantParams params = turboquant_params(128);
  EXPECT_EQ(params.slot_bytes, 136);  // 64 + 2 + 64 + 2 + 2 = 134, padded to 8
  TurboQuantSlotOffsets at = turboquant_slot_offsets(128);
  EXPECT_EQ(at.k_norm, 64);
  EXPECT_EQ(at.v_data, 66);
  EXPECT_EQ(at.v_scale, 130);
  EXPECT_EQ(at.v_zero, 132);
  EXPECT_EQ(at.end, 134);
}

TEST(TurboQuantSlot, EncodesABasisVectorAsHandComputed) {
  // k = 2 e_0: norm 2, and every rotated coordinate is s_0 * 2 / 2 = +-1, which lies in the cell of
  // centroid 0.9424 (index 11) or -0.9424 (index 4). v = 0, 15, 0, 15, ...: zero 0, scale 1, nibbles 0
  // and 15.
  const int d = 128;
  TurboQuantParams params = turboquant_params(d);
  std::vector<uint16_t> k(d, 0), v(d);
  k[0] = float_to_bf16(2.0f);
  for (int i = 0; i < d; ++i) v[i] = float_to_bf16(i % 2 == 0 ? 0.0f : 15.0f);
  std::vector<uint8_t> slot(params.slot_bytes, 0xaa);
  turboquant_quantize_reference(params, k, v, slot);

  uint8_t expected_index = rotation_sign(params.rotation_seed, 0) > 0 ? 11 : 4;
  for (int i = 0; i < d / 2; ++i) ASSERT_EQ(slot[i], expected_index | (expected_index << 4)) << i;
  EXPECT_EQ(slot[64] | (slot[65] << 8), 0x4000);                       // fp16 2.0
  for (int i = 0; i < d / 2; ++i) ASSERT_EQ(slot[66 + i], 0xf0) << i;  // even element in the low nibble
  EXPECT_EQ(slot[130] | (slot[131] << 8), 0x3c00);                     // scale 1.0
  EXPECT_EQ(slot[132] | (slot[133] << 8), 0x0000);                     // zero 0.0
  EXPECT_EQ(slot[134], 0);
  EXPECT_EQ(slot[135], 0);

  std::vector<uint16_t> k_out(d), v_out(d);
  turboquant_dequantize_reference(params, slot, k_out, v_out);
  EXPECT_EQ(v_out, v);  // exactly representable on the 4-bit grid
}

TEST(TurboQuantRoundTrip, KeyErrorIsTheLloydMaxDistortionOfAGaussian) {
  // A random rotation makes the unit key's coordinates nearly N(0, 1/d), so the relative MSE is close to
  // Max's 16-level distortion for a unit Gaussian, 0.009497; V's min/max grid gives about step^2 / 12.
  const int d = 128, vectors = 2000;
  TurboQuantParams params = turboquant_params(d);
  std::vector<uint16_t> k = gaussian_bf16(d * vectors, 1), v = gaussian_bf16(d * vectors, 2);
  std::vector<uint8_t> slots(static_cast<size_t>(vectors) * params.slot_bytes);
  turboquant_quantize_reference(params, k, v, slots);
  std::vector<uint16_t> k_out(k.size()), v_out(v.size());
  turboquant_dequantize_reference(params, slots, k_out, v_out);
  EXPECT_NEAR(relative_mse(k, k_out), 0.0095, 0.0015);
  EXPECT_LT(relative_mse(v, v_out), 0.015);
  EXPECT_GT(relative_mse(v, v_out), 0.004);
}

TEST(TurboQuantRoundTrip, ZeroKeyDecodesToZero) {
  const int d = 64;
  TurboQuantParams params = turboquant_params(d);
  std::vector<uint16_t> k(d, 0), v(d, float_to_bf16(3.0f));
  std::vector<uint8_t> slot(params.slot_bytes);
  turboquant_quantize_reference(params, k, v, slot);
  std::vector<uint16_t> k_out(d, 0xffff), v_out(d);
  turboquant_dequantize_reference(params, slot, k_out, v_out);
  for (int i = 0; i < d; ++i) {
    ASSERT_EQ(bf16_to_float(k_out[i]), 0.0f);
    ASSERT_EQ(bf16_to_float(v_out[i]), 3.0f);  // constant V: scale 0, value = zero point
  }
}

TEST(TurboQuantParams, RejectsHeadDimsTheRotationCannotHandle) {
  EXPECT_THROW(turboquant_params(96), std::invalid_argument);
  EXPECT_THROW(turboquant_params(16), std::invalid_argument);
  EXPECT_NO_THROW(turboquant_params(256));
}

TEST(TurboQuantReference, RejectsBuffersOfTheWrongSize) {
  TurboQuantParams params = turboquant_params(32);
  std::vector<uint16_t> k(64), v(32);
  std::vector<uint8_t> slots(2 * params.slot_bytes);
  EXPECT_THROW(turboquant_quantize_reference(params, k, v, slots), std::invalid_argument);
}

}  // namespace
}  // namespace kvtier::hw
