// Group-scaled int4 (KIVI-style): each group of `group_size` consecutive elements of a vector is stored
// as 4-bit values with an fp16 scale and an fp16 zero point, min/max asymmetric:
//   scale = (max - min) / 15, zero = min, q = round((x - zero) / scale) in [0, 15], x' = q * scale + zero.
//
// Record layout per vector of d elements (kv_layout's int4 size: d/2 + (d / group_size) * 4 bytes):
//   [data: d/2 bytes, even element in the low nibble | per group: scale fp16, zero fp16]
// Only fp16 scales with a zero point are implemented (the int4 and int4-g128 presets).
#pragma once

#include <cstdint>
#include <span>

#include "hw/kernels/quant_math.h"

namespace kvtier {
struct Encoding;  // kv_layout.h; declared here so that kernel sources need not parse yaml-cpp
}

namespace kvtier::hw {

struct Int4GroupParams {
  int row_elements = 128;  // d: elements per vector (one head's K or V)
  int group_size = 32;     // a power of two from 8 to 256 that divides row_elements
  KVTIER_HD int record_bytes() const { return row_elements / 2 + (row_elements / group_size) * 4; }
};

// Params for rows of `row_elements` under `encoding` (kInt4Group); throws std::invalid_argument for a
// group size, scale width or zero-point setting the kernels do not implement.
Int4GroupParams int4_group_params(int row_elements, const Encoding& encoding);

// References. x: [rows, row_elements] bf16 bit patterns; records: [rows, record_bytes].
void int4_group_quantize_reference(const Int4GroupParams& params, std::span<const uint16_t> x,
                                   std::span<uint8_t> records);
void int4_group_dequantize_reference(const Int4GroupParams& params, std::span<const uint8_t> records,
                                     std::span<uint16_t> x);

}  // namespace kvtier::hw
