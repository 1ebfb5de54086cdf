// Error checking for the GPU runtime: every runtime call and every kernel launch is checked, and a
// failure becomes a GpuError exception naming the call, the source line and the runtime's message.
// Library code throws; only main() decides to exit (the project's rule).
//
//   KVTIER_GPU_CHECK(gpuMalloc(&ptr, bytes));
//   my_kernel<<<grid, block, 0, stream>>>(...);
//   KVTIER_GPU_CHECK_LAUNCH("my_kernel");
#pragma once

#include <stdexcept>
#include <string>

#include "hw/gpu/vendor.h"

namespace kvtier::gpu {

class GpuError : public std::runtime_error {
 public:
  GpuError(gpuError_t code, const std::string& what) : std::runtime_error(what), code_(code) {}
  gpuError_t code() const { return code_; }

 private:
  gpuError_t code_;
};

// Throws GpuError when `code` is not gpuSuccess. `expression` and `file:line` locate the call.
void check(gpuError_t code, const char* expression, const char* file, int line);

// Number of devices the runtime sees; 0 where there is no driver or no device (never throws), so that
// tests can skip cleanly on machines without a GPU.
int visible_device_count();

// Blocks of `kernel` (a __global__ function) with `threads_per_block` threads that the current device
// keeps resident at once on all SMs/CUs, given the kernel's registers and shared memory: the grid size of
// a grid-stride kernel that fills the GPU in exactly one wave (a larger grid leaves a partial second wave).
int resident_blocks(const void* kernel, int threads_per_block);

// "NVIDIA H200 (sm_90, 139.8 GiB)" or "AMD Instinct MI355X (gfx950, ...)" for the current device.
std::string current_device_description();

}  // namespace kvtier::gpu

#define KVTIER_GPU_CHECK(expr) ::kvtier::gpu::check((expr), #expr, __FILE__, __LINE__)
// After a launch: configuration errors (bad grid, too much shared memory) surface here.
#define KVTIER_GPU_CHECK_LAUNCH(kernel_name) \
  ::kvtier::gpu::check(gpuGetLastError(), "launch of " kernel_name, __FILE__, __LINE__)
