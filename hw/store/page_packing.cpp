#include "hw/store/page_packing.h"

#include <algorithm>
#include <span>
#include <stdexcept>

#include "hw/store/store_error.h"
#include "sim/cache/tier_spec.h"
#include "sim/core/kv_layout.h"

namespace kvtier::hw {
namespace {

constexpr const char* kSupported =
    "the store keeps every tier in HBM's layout, or with bf16 in HBM, the tiers below it in one group-scaled "
    "int4 layout with fp16 scale and zero point (kv: int4 or int4-g128)";

bool all_bf16(const KvLayout& layout) {
  return std::all_of(layout.groups.begin(), layout.groups.end(),
                     [](const LayerGroup& g) { return g.encoding.kind == EncodingKind::kBf16; });
}

// Empty when every group of `layout` has the encoding of the first and the int4 kernels implement it on
// records of `row_elements` values.
std::string int4_problem(const KvLayout& layout, int row_elements) {
  if (layout.groups.empty()) return "it has no layers";
  const Encoding& first = layout.groups.front().encoding;
  for (const LayerGroup& g : layout.groups) {
    if (g.encoding != first) return "its layers are stored in more than one encoding";
  }
  try {
    int4_group_params(row_elements, first);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

[[noreturn]] void bad_request(const std::string& what) {
  throw StoreError(StoreErrc::kBadRequest, "tiered store: " + what);
}

}  // namespace

std::string lower_layout_problem(const KvLayout& hbm, const KvLayout& lower, int row_elements) {
  if (lower == hbm) return "";
  if (!all_bf16(hbm)) return std::string(kSupported) + "; HBM holds " + hbm.name;
  const std::string problem = int4_problem(lower, row_elements);
  if (!problem.empty()) return std::string(kSupported) + "; got " + lower.name + " (" + problem + ")";
  return "";
}

std::optional<PagePacking> page_packing(const TierSpec& hbm, const TierSpec& lower, int row_elements) {
  const std::string problem = lower_layout_problem(hbm.layout, lower.layout, row_elements);
  if (!problem.empty()) bad_request("tier " + lower.name + ": " + problem);
  if (lower.layout == hbm.layout) return std::nullopt;
  PagePacking packing;
  try {
    packing.params = int4_group_params(row_elements, lower.layout.groups.front().encoding);
  } catch (const std::invalid_argument& e) {
    bad_request("tier " + lower.name + ": " + e.what());
  }
  const int64_t row_bytes = int64_t{2} * row_elements;
  packing.rows = hbm.bytes_per_block() / row_bytes;
  if (packing.rows * row_bytes != hbm.bytes_per_block() ||
      static_cast<int64_t>(packing.packed_bytes()) != lower.bytes_per_block()) {
    bad_request("tier " + lower.name + ": an HBM page of " + std::to_string(hbm.bytes_per_block()) +
                " bytes does not pack into whole int4 records of " + std::to_string(row_elements) +
                " values making the tier's " + std::to_string(lower.bytes_per_block()) + " bytes per block");
  }
  return packing;
}

void pack_page(const PagePacking& packing, const std::byte* page, std::byte* packed) {
  const size_t elements = packing.page_bytes() / 2;
  int4_group_quantize_reference(packing.params, {reinterpret_cast<const uint16_t*>(page), elements},
                                {reinterpret_cast<uint8_t*>(packed), packing.packed_bytes()});
}

void unpack_page(const PagePacking& packing, const std::byte* packed, std::byte* page) {
  const size_t elements = packing.page_bytes() / 2;
  int4_group_dequantize_reference(packing.params,
                                  {reinterpret_cast<const uint8_t*>(packed), packing.packed_bytes()},
                                  {reinterpret_cast<uint16_t*>(page), elements});
}

}  // namespace kvtier::hw
