// Size arithmetic that cannot wrap.
//
// Bytes, blocks and tokens are int64_t. Inputs such as "1e20B", a block of 2^40 tokens or a model card with
// 2^24 KV heads of 2^24 dimensions make their products leave that range; a plain multiplication would then
// wrap (undefined behaviour, in practice a negative or tiny number that flows into hit rates and tables).
// These operations return std::nullopt instead, and the caller turns that into a ConfigError that names
// the input and the limit. The double -> int64_t conversion does the same for capacities given with a
// unit (parse_quantity returns doubles): NaN, infinities and values of 2^63 or more have no int64_t.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>

namespace kvtier {

// The largest byte, block or token count: 2^63 - 1 (about 9.22e18; 8 EiB of bytes).
inline constexpr int64_t kMaxCount = std::numeric_limits<int64_t>::max();

constexpr std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) return std::nullopt;
  return product;
}

constexpr std::optional<int64_t> checked_add(int64_t a, int64_t b) {
  int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) return std::nullopt;
  return sum;
}

// `value` truncated toward zero, or nullopt when it is NaN, infinite or outside [-2^63, 2^63).
constexpr std::optional<int64_t> checked_to_int64(double value) {
  constexpr double kTwoTo63 = 9223372036854775808.0;
  if (!(value >= -kTwoTo63 && value < kTwoTo63)) return std::nullopt;  // false for NaN too
  return static_cast<int64_t>(value);
}

}  // namespace kvtier
