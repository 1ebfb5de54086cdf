// Kernel rates on the GPU, timed with events (manual time): gather/scatter against the device-to-device
// copy rate, quantize/dequantize against HBM bandwidth. Rates count bytes read plus bytes written.
// Counters: `vs_d2d` = rate / measured cudaMemcpy device-to-device rate (same counting, 1 GiB);
// `vs_hbm` = rate / hbm_bandwidth of the hardware file (KVTIER_HARDWARE, default configs/hardware/h200).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <random>
#include <vector>

#include "sim/core/config_files.h"
#include "hw/gpu/device_buffer.h"
#include "sim/core/hardware.h"
#include "hw/kernels/kernels_gpu.h"
#include "sim/core/kv_layout.h"

namespace kvtier::hw {
namespace {

using gpu::DeviceBuffer;
using gpu::Event;

constexpr int64_t kGiB = int64_t{1} << 30;

// Runs `launch` on the default stream and reports event-timed seconds per iteration.
template <typename Launch>
void time_iterations(benchmark::State& state, int64_t bytes_moved, Launch&& launch) {
  launch();  // warm-up
  Event start, stop;
  for (auto _ : state) {
    start.record(nullptr);
    launch();
    stop.record(nullptr);
    stop.synchronize();
    state.SetIterationTime(stop.elapsed_ms_since(start) / 1e3);
  }
  state.SetBytesProcessed(state.iterations() * bytes_moved);
}

double device_copy_rate() {
  static const double rate = [] {
    DeviceBuffer<std::byte> a(kGiB), b(kGiB);
    KVTIER_GPU_CHECK(gpuMemcpy(b.data(), a.data(), kGiB, gpuMemcpyDeviceToDevice));
    Event start, stop;
    start.record(nullptr);
    for (int i = 0; i < 10; ++i)
      KVTIER_GPU_CHECK(gpuMemcpyAsync(b.data(), a.data(), kGiB, gpuMemcpyDeviceToDevice, nullptr));
    stop.record(nullptr);
    stop.synchronize();
    return 10 * 2.0 * kGiB / (stop.elapsed_ms_since(start) / 1e3);
  }();
  return rate;
}

double hbm_bandwidth() {
  const char* name = std::getenv("KVTIER_HARDWARE");
  static const double bandwidth =
      parse_hardware(load_config(name != nullptr ? name : "h200", "configs/hardware")).gpu.hbm_bandwidth;
  return bandwidth;
}

void set_rate_counters(benchmark::State& state, int64_t bytes_moved) {
  state.counters["vs_d2d"] = benchmark::Counter(static_cast<double>(bytes_moved) / device_copy_rate(),
                                                benchmark::Counter::kIsIterationInvariantRate);
  state.counters["vs_hbm"] = benchmark::Counter(static_cast<double>(bytes_moved) / hbm_bandwidth(),
                                                benchmark::Counter::kIsIterationInvariantRate);
}

void BM_DeviceToDeviceCopy(benchmark::State& state) {
  DeviceBuffer<std::byte> a(kGiB), b(kGiB);
  time_iterations(state, 2 * kGiB, [&] {
    KVTIER_GPU_CHECK(gpuMemcpyAsync(b.data(), a.data(), kGiB, gpuMemcpyDeviceToDevice, nullptr));
  });
  set_rate_counters(state, 2 * kGiB);
}

// Writing alone, for the kernels that write four times what they read (dequantize): cudaMemset of 1 GiB,
// counting the bytes written.
void BM_DeviceMemset(benchmark::State& state) {
  DeviceBuffer<std::byte> a(kGiB);
  time_iterations(state, kGiB, [&] { KVTIER_GPU_CHECK(gpuMemsetAsync(a.data(), 0x5a, kGiB, nullptr)); });
  set_rate_counters(state, kGiB);
}

// Moves 1 GiB of pages of state.range(0) bytes in a shuffled order; two groups (3/4 and 1/4 of each page,
// as a bf16 group beside a packed-uint8 group) in their own pools.
void page_copy_benchmark(benchmark::State& state, TransferDirection direction) {
  const int64_t page_bytes = state.range(0);
  const int64_t pages = kGiB / page_bytes;
  const int64_t first = page_bytes / 4 * 3, second = page_bytes - first;
  DeviceBuffer<std::byte> pool_a(pages * first), pool_b(pages * second), staging(kGiB);
  std::vector<int64_t> ids(static_cast<size_t>(pages));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), std::mt19937(1));
  DeviceBuffer<int64_t> device_ids(ids.size());
  device_ids.upload(ids.data(), ids.size());
  std::vector<PageGroup> groups = {{pool_a.data(), pages, first, first},
                                   {pool_b.data(), pages, second, second}};
  time_iterations(state, 2 * kGiB,
                  [&] { copy_pages(direction, groups, device_ids.data(), pages, staging.data(), nullptr); });
  set_rate_counters(state, 2 * kGiB);
}

void BM_Gather(benchmark::State& state) {
  page_copy_benchmark(state, TransferDirection::kGather);
}
void BM_Scatter(benchmark::State& state) {
  page_copy_benchmark(state, TransferDirection::kScatter);
}

constexpr int64_t kVectors = 4 << 20;  // 4 Mi token-heads of head_dim 128: 1 GiB of bf16 K and V each

void BM_TurboQuantQuantize(benchmark::State& state) {
  TurboQuantParams params = turboquant_params(128);
  DeviceBuffer<uint16_t> k(kVectors * 128), v(kVectors * 128);
  DeviceBuffer<uint8_t> slots(kVectors * params.slot_bytes);
  KVTIER_GPU_CHECK(gpuMemset(k.data(), 0x3f, k.bytes()));
  KVTIER_GPU_CHECK(gpuMemset(v.data(), 0x3f, v.bytes()));
  const int64_t moved = k.bytes() + v.bytes() + slots.bytes();
  time_iterations(state, moved,
                  [&] { turboquant_quantize(params, k.data(), v.data(), slots.data(), kVectors, nullptr); });
  set_rate_counters(state, moved);
}

void BM_TurboQuantDequantize(benchmark::State& state) {
  TurboQuantParams params = turboquant_params(128);
  DeviceBuffer<uint16_t> k(kVectors * 128), v(kVectors * 128);
  DeviceBuffer<uint8_t> slots(kVectors * params.slot_bytes);
  KVTIER_GPU_CHECK(gpuMemset(slots.data(), 0x5a, slots.bytes()));
  const int64_t moved = k.bytes() + v.bytes() + slots.bytes();
  time_iterations(state, moved, [&] {
    turboquant_dequantize(params, slots.data(), k.data(), v.data(), kVectors, nullptr);
  });
  set_rate_counters(state, moved);
}

Int4GroupParams int4_params(int group_size) {
  Encoding encoding;
  encoding.kind = EncodingKind::kInt4Group;
  encoding.group_size = group_size;
  return int4_group_params(128, encoding);
}

void BM_Int4Quantize(benchmark::State& state) {
  Int4GroupParams params = int4_params(static_cast<int>(state.range(0)));
  const int64_t rows = 2 * kVectors;
  DeviceBuffer<uint16_t> x(rows * 128);
  DeviceBuffer<uint8_t> records(rows * params.record_bytes());
  KVTIER_GPU_CHECK(gpuMemset(x.data(), 0x3f, x.bytes()));
  const int64_t moved = x.bytes() + records.bytes();
  time_iterations(state, moved,
                  [&] { int4_group_quantize(params, x.data(), records.data(), rows, nullptr); });
  set_rate_counters(state, moved);
}

void BM_Int4Dequantize(benchmark::State& state) {
  Int4GroupParams params = int4_params(static_cast<int>(state.range(0)));
  const int64_t rows = 2 * kVectors;
  DeviceBuffer<uint16_t> x(rows * 128);
  DeviceBuffer<uint8_t> records(rows * params.record_bytes());
  KVTIER_GPU_CHECK(gpuMemset(records.data(), 0x5a, records.bytes()));
  const int64_t moved = x.bytes() + records.bytes();
  time_iterations(state, moved,
                  [&] { int4_group_dequantize(params, records.data(), x.data(), rows, nullptr); });
  set_rate_counters(state, moved);
}

BENCHMARK(BM_DeviceToDeviceCopy)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DeviceMemset)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Gather)
    ->RangeMultiplier(4)
    ->Range(16 << 10, 1 << 20)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Scatter)
    ->RangeMultiplier(4)
    ->Range(16 << 10, 1 << 20)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_TurboQuantQuantize)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_TurboQuantDequantize)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Int4Quantize)->Arg(32)->Arg(128)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Int4Dequantize)->Arg(32)->Arg(128)->UseManualTime()->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace kvtier::hw
