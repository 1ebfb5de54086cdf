// The cell table of the TurboQuant quantize kernel: the codebook cell of a float (the number of the 15
// boundaries strictly below it, what codebook_index finds by binary search) from one 4-byte lookup keyed
// by the float's top 11 bits (sign, exponent, two mantissa bits) and an add. Host and device code, so that
// the CPU tests check the table against the search for every kind of float.
#pragma once

#include <cmath>
#include <cstdint>

#include "hw/kernels/quant_math.h"
#include "hw/kernels/turboquant.h"

namespace kvtier::hw {

inline constexpr int kCellBucketBits = 11;
inline constexpr int kCellBuckets = 1 << kCellBucketBits;
inline constexpr int kCellBucketShift =
    32 - kCellBucketBits;  // a float's bits >> kCellBucketShift: its bucket

// A bucket of the cell table, the floats whose top kCellBucketBits bits are its key, from bits `first` to
// `last`: each lies in cell `cell` or, if it is above `next_boundary`, in cell + 1.
struct CellBucket {
  float next_boundary;
  uint32_t cell;
  uint32_t first, last;
  bool negative;
};

// The bucket of `key` for ascending boundaries; `exact` is false if the bucket holds two boundaries (then
// the table cannot stand in for the binary search). The top bucket of +inf also holds signalling NaNs,
// which a product never is; the other NaN buckets map to cell 0, as the search does.
KVTIER_HD CellBucket cell_bucket(const TurboQuantCodebook& book, uint32_t key, bool& exact) {
  const uint32_t first = key << kCellBucketShift, last = first | ((1u << kCellBucketShift) - 1u);
  const bool negative = (key >> (kCellBucketBits - 1)) != 0;
  const bool special = ((first >> 23) & 0xffu) == 0xffu;  // infinities and NaNs
  const float low = bits_float(negative ? last : first), high = bits_float(negative ? first : last);
  uint32_t cell = 0;
  if (!special || first == 0x7f800000u) {
    const float bottom = special ? INFINITY : low;
    while (cell < 15 && book.boundaries[cell] < bottom) ++cell;
    if (!special && cell + 1 < 15 && book.boundaries[cell + 1] < high) exact = false;
  }
  // A boundary of -0 is +0: the same cut, and the one signed_order puts inside the bucket of +0.
  return {cell < 15 ? canonical_zero(book.boundaries[cell]) : INFINITY, cell, first, last, negative};
}

// Whether a cell table of `book` reproduces the binary search for every float a product can be: the
// boundaries ascend and no bucket holds two of them.
inline bool cell_table_matches_search(const TurboQuantCodebook& book) {
  bool exact = true;
  for (int i = 0; i + 1 < 15; ++i) exact = exact && book.boundaries[i] <= book.boundaries[i + 1];
  for (uint32_t key = 0; key < kCellBuckets && exact; ++key) cell_bucket(book, key, exact);
  return exact;
}

// The bits of a float as an integer that grows with the float among floats of one sign: |int32(bits)|,
// 2^31 for -0. One instruction (IABS).
KVTIER_HD uint32_t signed_order(uint32_t bits) {
  const uint32_t negative = static_cast<uint32_t>(static_cast<int32_t>(bits) >> 31);
  return (bits ^ negative) - negative;
}

// The 4-byte cell table entry of bucket `key`: every z of the bucket lies in cell
// (entry + signed_order(bits(z))) >> kCellBucketShift. The entry holds the bucket's cell, minus the order of
// its boundary (if it holds one, else of its last float) and 1, plus 2^kCellBucketShift: the sum carries into
// the cell exactly when z is above the boundary. Entries of 8 bytes (boundary and cell) made the quantize
// kernel bound by shared memory: a warp's lookups of Gaussian values took 4.5 wavefronts each, against 2.1 at
// 4 bytes.
KVTIER_HD uint32_t cell_entry(const TurboQuantCodebook& book, uint32_t key) {
  bool exact = true;
  const CellBucket bucket = cell_bucket(book, key, exact);
  const uint32_t boundary_bits = float_bits(bucket.next_boundary);
  const bool inside = bucket.cell < 15 && boundary_bits >> kCellBucketShift == key;
  const uint32_t top = signed_order(inside ? boundary_bits : bucket.negative ? bucket.first : bucket.last);
  return (bucket.cell << kCellBucketShift) + (1u << kCellBucketShift) - top - 1u;
}

// The cell of z from a table of cell_entry(book, key) for every key; equal to codebook_index whenever no
// bucket holds two boundaries.
KVTIER_HD uint32_t cell_table_lookup(const uint32_t* table, float z) {
  const uint32_t bits = float_bits(z);
  return (table[bits >> kCellBucketShift] + signed_order(bits)) >> kCellBucketShift;
}

}  // namespace kvtier::hw
