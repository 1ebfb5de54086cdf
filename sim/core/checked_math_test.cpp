#include "sim/core/checked_math.h"

#include <gtest/gtest.h>

#include <cmath>

namespace kvtier {
namespace {

TEST(CheckedMath, MultiplyUpToTheLimitAndNoFurther) {
  EXPECT_EQ(checked_mul(79488, 512), 40697856);
  EXPECT_EQ(checked_mul(-3, 4), -12);
  EXPECT_EQ(checked_mul(0, kMaxCount), 0);
  // 2^62 * 2 = 2^63 is one past the largest int64_t; 3037000499^2 = 9223372030926249001 fits.
  EXPECT_EQ(checked_mul(int64_t{1} << 62, 2), std::nullopt);
  EXPECT_EQ(checked_mul(3037000499, 3037000499), 9223372030926249001);
  EXPECT_EQ(checked_mul(3037000500, 3037000500), std::nullopt);
  EXPECT_EQ(checked_mul(-(int64_t{1} << 62), 2), std::numeric_limits<int64_t>::min());
}

TEST(CheckedMath, AddUpToTheLimitAndNoFurther) {
  EXPECT_EQ(checked_add(kMaxCount - 1, 1), kMaxCount);
  EXPECT_EQ(checked_add(kMaxCount, 1), std::nullopt);
  EXPECT_EQ(checked_add(std::numeric_limits<int64_t>::min(), -1), std::nullopt);
}

TEST(CheckedMath, DoubleToInt64RejectsWhatHasNoInt64) {
  EXPECT_EQ(checked_to_int64(141e9), 141000000000);
  EXPECT_EQ(checked_to_int64(2.9), 2);
  EXPECT_EQ(checked_to_int64(-2.9), -2);
  EXPECT_EQ(checked_to_int64(-0.0), 0);
  // 2^63 - 1024 is the largest double below 2^63.
  EXPECT_EQ(checked_to_int64(9223372036854774784.0), 9223372036854774784);
  EXPECT_EQ(checked_to_int64(9223372036854775808.0), std::nullopt);
  EXPECT_EQ(checked_to_int64(-9223372036854775808.0), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(checked_to_int64(1e20), std::nullopt);
  EXPECT_EQ(checked_to_int64(-1e20), std::nullopt);
  EXPECT_EQ(checked_to_int64(std::nan("")), std::nullopt);
  EXPECT_EQ(checked_to_int64(INFINITY), std::nullopt);
  EXPECT_EQ(checked_to_int64(-INFINITY), std::nullopt);
}

}  // namespace
}  // namespace kvtier
