// How the tiers below HBM hold an HBM page: unchanged, or packed as group-scaled int4.
//
// The simulator lets a lower tier keep KV in another layout than HBM (a scenario's `kv: int4` on DRAM or
// NVMe): a block shrinks on its way down and grows back to bf16 on its way up. The store does the same for
// one pairing, bf16 in HBM and one group-scaled int4 encoding with fp16 scale and zero point on every
// layer below (the int4 and int4-g128 presets, or a group size from 8 to 256): a copy down quantizes the
// page before it leaves HBM, a promotion dequantizes it after it arrived, and DRAM <-> NVMe moves the
// packed bytes. Other pairings are refused (lower_layout_problem says why).
//
// A page is read as rows of `row_elements` bf16 values (one head's K or V vector: the model's head_dim),
// and each row becomes one record of int4_group.h, records back to back. Groups never straddle rows, so
// the values after a round trip and the packed size (rows x record bytes, which is what kv_layout.h
// counts for the lower tier) do not depend on row_elements; only the arrangement of the records does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "hw/kernels/int4_group.h"

namespace kvtier {
struct KvLayout;  // kv_layout.h
struct TierSpec;  // tier_spec.h
}  // namespace kvtier

namespace kvtier::hw {

struct PagePacking {
  Int4GroupParams params;
  int64_t rows = 0;  // records per page
  uint64_t page_bytes() const {
    return static_cast<uint64_t>(rows) * static_cast<uint64_t>(params.row_elements) * 2;
  }
  uint64_t packed_bytes() const {
    return static_cast<uint64_t>(rows) * static_cast<uint64_t>(params.record_bytes());
  }
};

// Why the store cannot make `lower`'s pages from `hbm`'s with records of `row_elements` values; empty when
// it can: the same layout (pages move unchanged), or bf16 on every layer of hbm and one int4 encoding the
// kernels implement on every layer of lower, its groups dividing a record.
std::string lower_layout_problem(const KvLayout& hbm, const KvLayout& lower, int row_elements);

// The packing from `hbm`'s pages to `lower`'s, nullopt when they share a layout. Throws
// StoreError(kBadRequest) with lower_layout_problem()'s reason, or when a page is not whole rows of
// `row_elements` whose records make lower's bytes per block.
std::optional<PagePacking> page_packing(const TierSpec& hbm, const TierSpec& lower, int row_elements);

// The CPU reference of a packed copy: a page (page_bytes() of bf16, 2-byte aligned) to its records, and
// back. Bit-identical to the GPU kernels (int4_group.h).
void pack_page(const PagePacking& packing, const std::byte* page, std::byte* packed);
void unpack_page(const PagePacking& packing, const std::byte* packed, std::byte* page);

}  // namespace kvtier::hw
