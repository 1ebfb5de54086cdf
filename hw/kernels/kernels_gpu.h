// The GPU kernels of the hardware mode, behind host launchers that check their arguments.
//
// Each launcher validates shapes and alignment on the host (std::invalid_argument on a bad call),
// enqueues one kernel on `stream`, and checks the launch (GpuError). All pointers are device pointers.
// The outputs are bit-identical to the CPU references in page_copy.h, turboquant.h and int4_group.h,
// which define the formats; see docs/hw-kernels.md for the grid mappings.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "hw/gpu/vendor.h"
#include "hw/kernels/int4_group.h"
#include "hw/kernels/page_copy.h"
#include "hw/kernels/turboquant.h"

namespace kvtier::hw {

// Gather (pools -> staging) or scatter (staging -> pools) of `page_count` pages listed in `page_ids`
// (device memory, [page_count]); `staging` is [page_count, staged_page_bytes(groups)] bytes.
// REQUIRES: page ids below every group's pool_pages (not checked on the device).
void copy_pages(TransferDirection direction, std::span<const PageGroup> groups, const int64_t* page_ids,
                int64_t page_count, std::byte* staging, gpuStream_t stream);

// k, v: [vectors, head_dim] bf16 (16-byte aligned); slots: [vectors, slot_bytes].
void turboquant_quantize(const TurboQuantParams& params, const uint16_t* k, const uint16_t* v, uint8_t* slots,
                         int64_t vectors, gpuStream_t stream);
void turboquant_dequantize(const TurboQuantParams& params, const uint8_t* slots, uint16_t* k, uint16_t* v,
                           int64_t vectors, gpuStream_t stream);

// x: [rows, row_elements] bf16 (16-byte aligned); records: [rows, record_bytes] (4-byte aligned).
void int4_group_quantize(const Int4GroupParams& params, const uint16_t* x, uint8_t* records, int64_t rows,
                         gpuStream_t stream);
void int4_group_dequantize(const Int4GroupParams& params, const uint8_t* records, uint16_t* x, int64_t rows,
                           gpuStream_t stream);

}  // namespace kvtier::hw
