// The quantize kernel's cell table (cell_table.h) against the reference's binary search
// (codebook_index), on the host: each bucket's first, middle and last floats, every boundary and its
// neighbours, zeros and subnormals of both signs, infinities, NaNs and a million random bit patterns.
#include "hw/kernels/cell_table.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <random>
#include <vector>

namespace kvtier::hw {
namespace {

std::vector<uint32_t> table_of(const TurboQuantCodebook& book) {
  std::vector<uint32_t> table(kCellBuckets);
  for (uint32_t key = 0; key < kCellBuckets; ++key) table[key] = cell_entry(book, key);
  return table;
}

// Floats a product can be: every bit pattern but the signalling NaNs that share the bucket of +inf.
std::vector<float> probes(const TurboQuantCodebook& book) {
  std::vector<uint32_t> bits;
  for (uint32_t key = 0; key < kCellBuckets; ++key) {
    for (uint32_t offset : {0u, 1u, 1u << 20, (1u << kCellBucketShift) - 1u})
      bits.push_back(key << kCellBucketShift | offset);
  }
  const float inf = std::numeric_limits<float>::infinity();
  for (float b : book.boundaries) {
    for (float x : {b, std::nextafter(b, -inf), std::nextafter(b, inf)}) {
      bits.push_back(float_bits(x));
      bits.push_back(float_bits(-x));
    }
  }
  for (uint32_t tiny : {0u, 1u, 2u, 0x1fffffu, 0x200000u, 0x7fffffu}) {
    bits.push_back(tiny);
    bits.push_back(tiny | 0x80000000u);
  }
  std::mt19937 rng(7);
  for (int i = 0; i < 1'000'000; ++i) bits.push_back(static_cast<uint32_t>(rng()));
  std::vector<float> out;
  for (uint32_t b : bits) {
    if (b > 0x7f800000u && b < 0x7fa00000u) continue;
    out.push_back(bits_float(b));
  }
  return out;
}

void expect_table_matches_search(const TurboQuantCodebook& book) {
  ASSERT_TRUE(cell_table_matches_search(book));
  const std::vector<uint32_t> table = table_of(book);
  size_t mismatches = 0;
  uint32_t first = 0;
  for (float z : probes(book)) {
    if (cell_table_lookup(table.data(), z) == codebook_index(book.boundaries, z)) continue;
    if (mismatches++ == 0) first = float_bits(z);
  }
  EXPECT_EQ(mismatches, 0u) << "first at float bits 0x" << std::hex << first;
}

TEST(CellTable, MatchesTheBinarySearchOnTheGaussianCodebook) {
  expect_table_matches_search(gaussian_codebook());
}

TEST(CellTable, TakesABoundaryOfNegativeZeroAsTheCutOfPositiveZero) {
  // Kept as -0, the boundary would fall outside the bucket of +0 and leave the subnormals above +0 one
  // cell too low.
  TurboQuantCodebook book = gaussian_codebook();
  book.boundaries[7] = -0.0f;
  expect_table_matches_search(book);
}

TEST(CellTable, MatchesTheBinarySearchWithBoundariesOnBucketEdges) {
  // Powers of two are the first float of a positive bucket and the last of a negative one.
  const float edges[15] = {-128, -64, -32, -16, -8, -4, -2, 0, 0.125f, 0.25f, 0.5f, 1, 2, 4, 8};
  TurboQuantCodebook book = gaussian_codebook();
  std::copy(std::begin(edges), std::end(edges), book.boundaries);
  expect_table_matches_search(book);
}

}  // namespace
}  // namespace kvtier::hw
