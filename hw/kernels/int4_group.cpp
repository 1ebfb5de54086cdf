#include "hw/kernels/int4_group.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "sim/core/kv_layout.h"
#include "hw/kernels/quant_math.h"

namespace kvtier::hw {
namespace {

size_t checked_rows(const Int4GroupParams& params, size_t elements, size_t record_bytes) {
  size_t rows = elements / params.row_elements;
  if (elements != rows * params.row_elements || record_bytes != rows * params.record_bytes()) {
    throw std::invalid_argument("int4: " + std::to_string(elements) + " elements and " +
                                std::to_string(record_bytes) + " record bytes are not whole rows of " +
                                std::to_string(params.row_elements) + " elements / " +
                                std::to_string(params.record_bytes()) + " bytes");
  }
  return rows;
}

}  // namespace

Int4GroupParams int4_group_params(int row_elements, const Encoding& encoding) {
  const int g = encoding.group_size;
  if (encoding.kind != EncodingKind::kInt4Group || encoding.scale_bytes != 2 || !encoding.zero_point) {
    throw std::invalid_argument(
        "int4 kernels implement group-scaled int4 with fp16 scale and zero point; got " + encoding.name());
  }
  if (g < 8 || g > 256 || (g & (g - 1)) != 0 || row_elements % g != 0) {
    throw std::invalid_argument("int4: group_size must be a power of two from 8 to 256 dividing " +
                                std::to_string(row_elements) + ", got " + std::to_string(g));
  }
  return Int4GroupParams{row_elements, g};
}

void int4_group_quantize_reference(const Int4GroupParams& params, std::span<const uint16_t> x,
                                   std::span<uint8_t> records) {
  const size_t rows = checked_rows(params, x.size(), records.size());
  const int d = params.row_elements, g = params.group_size;
  for (size_t r = 0; r < rows; ++r) {
    const uint16_t* in = x.data() + r * d;
    uint8_t* record = records.data() + r * params.record_bytes();
    uint8_t* group_params = record + d / 2;
    for (int first = 0; first < d; first += g) {
      float lo = INFINITY, hi = -INFINITY;
      for (int i = first; i < first + g; ++i) widen_bounds(bf16_to_float(in[i]), lo, hi);
      lo = canonical_zero(lo);
      hi = canonical_zero(hi);
      uint16_t zero_h = float_to_fp16(lo);
      uint16_t scale_h = float_to_fp16((hi - lo) / 15.0f);
      float zero = fp16_to_float(zero_h), inverse = inverse_scale(fp16_to_float(scale_h));
      for (int i = first; i < first + g; i += 2) {
        uint32_t even = affine_nibble(bf16_to_float(in[i]), zero, inverse);
        uint32_t odd = affine_nibble(bf16_to_float(in[i + 1]), zero, inverse);
        record[i / 2] = static_cast<uint8_t>(even | (odd << 4));
      }
      uint8_t* p = group_params + (first / g) * 4;
      p[0] = static_cast<uint8_t>(scale_h & 0xff);
      p[1] = static_cast<uint8_t>(scale_h >> 8);
      p[2] = static_cast<uint8_t>(zero_h & 0xff);
      p[3] = static_cast<uint8_t>(zero_h >> 8);
    }
  }
}

void int4_group_dequantize_reference(const Int4GroupParams& params, std::span<const uint8_t> records,
                                     std::span<uint16_t> x) {
  const size_t rows = checked_rows(params, x.size(), records.size());
  const int d = params.row_elements, g = params.group_size;
  for (size_t r = 0; r < rows; ++r) {
    const uint8_t* record = records.data() + r * params.record_bytes();
    uint16_t* out = x.data() + r * d;
    for (int i = 0; i < d; ++i) {
      const uint8_t* p = record + d / 2 + (i / g) * 4;
      float scale = fp16_to_float(static_cast<uint16_t>(p[0] | (p[1] << 8)));
      float zero = fp16_to_float(static_cast<uint16_t>(p[2] | (p[3] << 8)));
      uint32_t nibble = (record[i / 2] >> (4 * (i & 1))) & 0xfu;
      out[i] = float_to_bf16(affine_value(nibble, zero, scale));
    }
  }
}

}  // namespace kvtier::hw
