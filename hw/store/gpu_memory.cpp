#include "hw/store/gpu_memory.h"

#include "hw/gpu/check.h"

namespace kvtier::hw {

MemoryRegion allocate_pinned_region(uint64_t bytes) {
  void* data = nullptr;
  KVTIER_GPU_CHECK(gpuHostAlloc(&data, bytes, gpuHostAllocPortable));
  return MemoryRegion(static_cast<std::byte*>(data), bytes, MemoryKind::kPinnedHost,
                      [](std::byte* p) { (void)gpuFreeHost(p); });
}

MemoryRegion allocate_device_region(uint64_t bytes) {
  void* data = nullptr;
  KVTIER_GPU_CHECK(gpuMalloc(&data, bytes));
  return MemoryRegion(static_cast<std::byte*>(data), bytes, MemoryKind::kDevice,
                      [](std::byte* p) { (void)gpuFree(p); });
}

void copy_rows_async(void* destination, uint64_t destination_pitch, const void* source, uint64_t source_pitch,
                     uint64_t row_bytes, uint64_t rows, gpuMemcpyKind kind, gpuStream_t stream) {
  if (rows == 0) return;
  if (destination_pitch == row_bytes && source_pitch == row_bytes) {
    KVTIER_GPU_CHECK(gpuMemcpyAsync(destination, source, row_bytes * rows, kind, stream));
    return;
  }
  // gpu/vendor.h maps no 2D copy; the two runtimes spell it alike.
#if defined(KVTIER_GPU_CUDA)
  KVTIER_GPU_CHECK(
      cudaMemcpy2DAsync(destination, destination_pitch, source, source_pitch, row_bytes, rows, kind, stream));
#else
  KVTIER_GPU_CHECK(
      hipMemcpy2DAsync(destination, destination_pitch, source, source_pitch, row_bytes, rows, kind, stream));
#endif
}

}  // namespace kvtier::hw
