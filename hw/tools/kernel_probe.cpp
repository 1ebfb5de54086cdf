#include "hw/tools/kernel_probe.h"

#include <algorithm>
#include <numeric>
#include <random>

#include "hw/tools/event_timer.h"
#include "hw/store/gpu_memory.h"
#include "hw/store/hbm_kv_cache.h"
#include "hw/kernels/kernels_gpu.h"
#include "hw/tools/tool_support.h"

namespace kvtier::hw {
namespace {

constexpr uint64_t kProbeBytes = 1ull << 30;

// A bf16 boundary group and a packed 4-bit body, 64 KiB per page together, pages in random order.
std::vector<KernelRate> page_copy_rates() {
  const std::vector<int64_t> page_bytes = {16384, 49152};
  const int64_t pages = static_cast<int64_t>(kProbeBytes / 65536);
  HbmKvCache cache(page_bytes, pages);
  for (const PageGroup& group : cache.groups()) {
    fill_random_device(group.pool, static_cast<uint64_t>(group.pool_pages * group.page_stride), 17);
  }
  std::vector<int64_t> ids(static_cast<size_t>(pages));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), std::mt19937_64(19));
  gpu::DeviceBuffer<int64_t> device_ids(ids.size());
  device_ids.upload(ids.data(), ids.size());
  MemoryRegion staging = allocate_device_region(kProbeBytes);
  gpu::Stream stream;
  std::vector<KernelRate> rates;
  for (TransferDirection direction : {TransferDirection::kGather, TransferDirection::kScatter}) {
    const double seconds = median_seconds(stream.get(), [&] {
      copy_pages(direction, cache.groups(), device_ids.data(), pages, staging.data(), stream.get());
    });
    rates.push_back({direction == TransferDirection::kGather ? "gather" : "scatter",
                     static_cast<double>(pages * cache.staged_page_bytes()) / seconds});
  }
  return rates;
}

std::vector<KernelRate> quantize_rates() {
  const int head_dim = 128;
  const int64_t vectors = static_cast<int64_t>(kProbeBytes / 2 / (head_dim * 2));  // K and V: 1 GiB of bf16
  const uint64_t side_bytes = static_cast<uint64_t>(vectors) * head_dim * 2;
  MemoryRegion k = allocate_device_region(side_bytes);
  MemoryRegion v = allocate_device_region(side_bytes);
  fill_random_bf16_device(k.data(), side_bytes);
  fill_random_bf16_device(v.data(), side_bytes);
  const TurboQuantParams turbo = turboquant_params(head_dim);
  MemoryRegion slots = allocate_device_region(static_cast<uint64_t>(vectors * turbo.slot_bytes));
  const Int4GroupParams int4{head_dim, 32};
  MemoryRegion records = allocate_device_region(static_cast<uint64_t>(vectors * int4.record_bytes()));
  auto* k16 = reinterpret_cast<uint16_t*>(k.data());
  auto* v16 = reinterpret_cast<uint16_t*>(v.data());
  auto* slot8 = reinterpret_cast<uint8_t*>(slots.data());
  auto* record8 = reinterpret_cast<uint8_t*>(records.data());
  gpu::Stream stream;
  auto rate = [&](const char* name, uint64_t bf16_bytes, auto enqueue) {
    return KernelRate{name, static_cast<double>(bf16_bytes) / median_seconds(stream.get(), enqueue)};
  };
  // TurboQuant packs K and V of a token into one slot; the int4 format is per row, timed over K alone.
  return {rate("quantize_turboquant4", 2 * side_bytes,
               [&] { turboquant_quantize(turbo, k16, v16, slot8, vectors, stream.get()); }),
          rate("dequantize_turboquant4", 2 * side_bytes,
               [&] { turboquant_dequantize(turbo, slot8, k16, v16, vectors, stream.get()); }),
          rate("quantize_int4_g32", side_bytes,
               [&] { int4_group_quantize(int4, k16, record8, vectors, stream.get()); }),
          rate("dequantize_int4_g32", side_bytes,
               [&] { int4_group_dequantize(int4, record8, k16, vectors, stream.get()); })};
}

}  // namespace

std::vector<KernelRate> measure_kernel_rates() {
  std::vector<KernelRate> rates = page_copy_rates();
  for (KernelRate& rate : quantize_rates()) rates.push_back(rate);
  return rates;
}

}  // namespace kvtier::hw
