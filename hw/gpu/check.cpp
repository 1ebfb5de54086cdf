#include "hw/gpu/check.h"

#include <algorithm>
#include <cstdio>

namespace kvtier::gpu {

void check(gpuError_t code, const char* expression, const char* file, int line) {
  if (code == gpuSuccess) return;
  throw GpuError(code, std::string(file) + ":" + std::to_string(line) + ": " + expression +
                           " failed: " + gpuGetErrorName(code) + " (" + gpuGetErrorString(code) + ")");
}

int visible_device_count() {
  int count = 0;
  if (gpuGetDeviceCount(&count) != gpuSuccess) {
    // Clear the sticky "no driver" error so later calls do not report it again.
    (void)gpuGetLastError();
    return 0;
  }
  return count;
}

int resident_blocks(const void* kernel, int threads_per_block) {
  int device = 0, processors = 0, per_processor = 0;
  KVTIER_GPU_CHECK(gpuGetDevice(&device));
  KVTIER_GPU_CHECK(gpuDeviceGetAttribute(&processors, gpuDevAttrMultiProcessorCount, device));
  KVTIER_GPU_CHECK(
      gpuOccupancyMaxActiveBlocksPerMultiprocessor(&per_processor, kernel, threads_per_block, 0));
  return processors * std::max(1, per_processor);
}

std::string current_device_description() {
  int device = 0;
  KVTIER_GPU_CHECK(gpuGetDevice(&device));
  gpuDeviceProp prop{};
  KVTIER_GPU_CHECK(gpuGetDeviceProperties(&prop, device));
#if defined(KVTIER_GPU_CUDA)
  std::string arch = "sm_" + std::to_string(prop.major) + std::to_string(prop.minor);
#else
  std::string arch = prop.gcnArchName;
#endif
  char memory[32];
  std::snprintf(memory, sizeof memory, "%.1f GiB", static_cast<double>(prop.totalGlobalMem) / (1 << 30));
  return std::string(prop.name) + " (" + arch + ", " + memory + ")";
}

}  // namespace kvtier::gpu
