// GPU-side memory for the store's tiers, and the one copy call the vendor header does not map.
//
// Pinned host memory is what makes host<->device copies run at full PCIe speed and lets them run
// asynchronously beside kernels; its pages are also 4 KiB-aligned, so the NVMe store can read and
// write them with O_DIRECT without a bounce buffer. Device memory backs the HBM page pools.
#pragma once

#include <cstddef>
#include <cstdint>

#include "hw/gpu/vendor.h"
#include "hw/store/memory_region.h"

namespace kvtier::hw {

// Page-locked host memory from the GPU runtime. Throws gpu::GpuError when the runtime refuses.
MemoryRegion allocate_pinned_region(uint64_t bytes);
// Device memory (HBM). Throws gpu::GpuError.
MemoryRegion allocate_device_region(uint64_t bytes);

// Copies `rows` rows of `row_bytes` between buffers whose rows start every `*_pitch` bytes, as one
// asynchronous call (one DMA job instead of one per row). A plain copy when both pitches equal row_bytes.
void copy_rows_async(void* destination, uint64_t destination_pitch, const void* source, uint64_t source_pitch,
                     uint64_t row_bytes, uint64_t rows, gpuMemcpyKind kind, gpuStream_t stream);

}  // namespace kvtier::hw
