#include "hw/tools/copy_probe.h"

#include <algorithm>

#include "hw/tools/event_timer.h"
#include "hw/gpu/device_buffer.h"
#include "hw/store/gpu_memory.h"

namespace kvtier::hw {

namespace {

// Enough copies per timing that launch overhead and event resolution vanish: >= 256 MiB, >= 8 copies.
int copies_per_timing(uint64_t bytes) {
  return static_cast<int>(std::clamp<uint64_t>((256ull << 20) / bytes, 8, 4000));
}

}  // namespace

std::vector<CopySample> measure_host_copies(std::span<const uint64_t> sizes) {
  const uint64_t largest = *std::max_element(sizes.begin(), sizes.end());
  MemoryRegion host = allocate_pinned_region(largest);
  MemoryRegion device = allocate_device_region(largest);
  std::fill_n(host.data(), largest, std::byte{0x5c});
  gpu::Stream stream;
  std::vector<CopySample> samples;
  for (CopyDirection direction : {CopyDirection::kHostToDevice, CopyDirection::kDeviceToHost}) {
    for (uint64_t bytes : sizes) {
      const int copies = copies_per_timing(bytes);
      const double seconds =
          median_seconds(stream.get(),
                         [&] {
                           for (int i = 0; i < copies; ++i) {
                             if (direction == CopyDirection::kHostToDevice) {
                               KVTIER_GPU_CHECK(gpuMemcpyAsync(device.data(), host.data(), bytes,
                                                               gpuMemcpyHostToDevice, stream.get()));
                             } else {
                               KVTIER_GPU_CHECK(gpuMemcpyAsync(host.data(), device.data(), bytes,
                                                               gpuMemcpyDeviceToHost, stream.get()));
                             }
                           }
                         }) /
          copies;
      samples.push_back({direction, bytes, seconds, static_cast<double>(bytes) / seconds});
    }
  }
  return samples;
}

CopySample measure_bidirectional_copy(uint64_t bytes) {
  MemoryRegion host_in = allocate_pinned_region(bytes);
  MemoryRegion host_out = allocate_pinned_region(bytes);
  MemoryRegion device_in = allocate_device_region(bytes);
  MemoryRegion device_out = allocate_device_region(bytes);
  std::fill_n(host_in.data(), bytes, std::byte{0x3a});
  gpu::Stream up;
  gpu::Stream down;
  gpu::Event forked;
  gpu::Event down_done;
  const int copies = copies_per_timing(bytes);
  // The timing stream (`up`) forks `down` off and joins it back, so one pair of events spans both.
  const double seconds =
      median_seconds(up.get(),
                     [&] {
                       forked.record(up.get());
                       KVTIER_GPU_CHECK(gpuStreamWaitEvent(down.get(), forked.get(), 0));
                       for (int i = 0; i < copies; ++i) {
                         KVTIER_GPU_CHECK(gpuMemcpyAsync(device_in.data(), host_in.data(), bytes,
                                                         gpuMemcpyHostToDevice, up.get()));
                         KVTIER_GPU_CHECK(gpuMemcpyAsync(host_out.data(), device_out.data(), bytes,
                                                         gpuMemcpyDeviceToHost, down.get()));
                       }
                       down_done.record(down.get());
                       KVTIER_GPU_CHECK(gpuStreamWaitEvent(up.get(), down_done.get(), 0));
                     }) /
      copies;
  return {CopyDirection::kBoth, bytes, seconds, 2.0 * static_cast<double>(bytes) / seconds};
}

CopySample measure_device_copy(uint64_t bytes) {
  MemoryRegion source = allocate_device_region(bytes);
  MemoryRegion destination = allocate_device_region(bytes);
  KVTIER_GPU_CHECK(gpuMemset(source.data(), 0x6b, bytes));
  gpu::Stream stream;
  const int copies = 8;
  const double seconds =
      median_seconds(stream.get(),
                     [&] {
                       for (int i = 0; i < copies; ++i) {
                         KVTIER_GPU_CHECK(gpuMemcpyAsync(destination.data(), source.data(), bytes,
                                                         gpuMemcpyDeviceToDevice, stream.get()));
                       }
                     }) /
      copies;
  return {CopyDirection::kDeviceToDevice, bytes, seconds, 2.0 * static_cast<double>(bytes) / seconds};
}

}  // namespace kvtier::hw
