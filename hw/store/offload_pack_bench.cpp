// Demotion and promotion of KV pages on the GPU, bf16 pages against int4-packed ones: what the tiered
// store's HBM -> DRAM offload and DRAM -> HBM reload cost when the tiers below HBM hold bf16 (pages move
// unchanged) or int4 (page_packing.h: quantized after the gather, dequantized before the scatter, and
// 3.2x fewer bytes across PCIe). Each iteration moves 1 GiB of bf16 KV as one batched call through
// GpuDevicePages, as run_batch() does, and waits for it (wall time). Promotion reloads whatever the host
// pages hold (zeros): the kernels' cost does not depend on the values.
//
// Arguments: tokens per block (16: 2 MiB pages, 256: 32 MiB), packed (0: bf16, 1: int4 group 32). Pages
// are Llama-3.1-8B's: 32 layers x 8 KV heads x 128 values, 131,072 bf16 bytes per token. Counters:
// `kv_rate` = bf16 KV bytes per second (the same for both encodings, so the rows compare directly);
// bytes_per_second = bytes that crossed to or from host memory.
#include <benchmark/benchmark.h>

#include <numeric>
#include <vector>

#include "hw/gpu/check.h"
#include "hw/store/gpu_device_pages.h"
#include "sim/cache/tier_spec.h"
#include "sim/core/kv_layout.h"

namespace kvtier::hw {
namespace {

constexpr uint64_t kBatchBytes = 1ull << 30;

ModelCard llama_8b_shape() {
  ModelCard model;
  model.name = "llama-3.1-8b";
  model.layers = 32;
  model.kv_heads = 8;
  model.head_dim = 128;
  return model;
}

TierSpec tier_of(const ModelCard& model, const std::string& preset, int64_t block_tokens) {
  return single_tier(build_layout(model, *kv_preset(preset), preset), block_tokens, 0, PolicyKind::kLru);
}

// The pages of one iteration on the device, their host pages, and the packing when int4.
struct PageBatch {
  explicit PageBatch(const benchmark::State& state)
      : block_tokens(state.range(0)),
        hbm(tier_of(llama_8b_shape(), "bf16", block_tokens)),
        packing(state.range(1) != 0 ? page_packing(hbm, tier_of(llama_8b_shape(), "int4", block_tokens), 128)
                                    : std::nullopt),
        pages(static_cast<int64_t>(kBatchBytes / static_cast<uint64_t>(hbm.bytes_per_block()))),
        device(std::vector<int64_t>{hbm.bytes_per_block()}, pages),
        pitch(round_up_to_io(packing ? packing->packed_bytes() : device.page_bytes())),
        host(device.allocate_host(pitch * static_cast<uint64_t>(pages))),
        ids(static_cast<size_t>(pages)) {
    std::iota(ids.begin(), ids.end(), int64_t{0});
    for (int64_t p = 0; p < pages; ++p) host_pages.push_back(host.data() + static_cast<uint64_t>(p) * pitch);
  }

  void demote() {
    if (packing) {
      device.offload_packed(*packing, ids, host_pages);
    } else {
      device.offload(ids, host_pages);
    }
    device.synchronize();
  }
  void promote() {
    if (packing) {
      device.reload_packed(*packing, ids, host_pages);
    } else {
      device.reload(ids, host_pages);
    }
    device.synchronize();
  }
  uint64_t crossing_bytes() const {
    return static_cast<uint64_t>(pages) * (packing ? packing->packed_bytes() : device.page_bytes());
  }

  int64_t block_tokens;
  TierSpec hbm;
  std::optional<PagePacking> packing;
  int64_t pages;
  GpuDevicePages device;
  uint64_t pitch;
  MemoryRegion host;
  std::vector<int64_t> ids;
  std::vector<std::byte*> host_pages;
};

template <typename Copy>
void time_copies(benchmark::State& state, PageBatch& batch, Copy copy) {
  copy();  // warm-up: allocates the packed staging buffers
  for (auto _ : state) copy();
  const auto moved = static_cast<int64_t>(state.iterations());
  state.SetBytesProcessed(moved * static_cast<int64_t>(batch.crossing_bytes()));
  state.counters["kv_rate"] = benchmark::Counter(
      static_cast<double>(moved) * static_cast<double>(kBatchBytes), benchmark::Counter::kIsRate);
  state.SetLabel(batch.packing ? "int4-g32" : "bf16");
}

bool skip_without_gpu(benchmark::State& state) {
  if (gpu::visible_device_count() > 0) return false;
  state.SkipWithError("no GPU visible");
  return true;
}

void BM_Demote(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  PageBatch batch(state);
  time_copies(state, batch, [&] { batch.demote(); });
}

void BM_Promote(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  PageBatch batch(state);
  time_copies(state, batch, [&] { batch.promote(); });
}

BENCHMARK(BM_Demote)->ArgsProduct({{16, 256}, {0, 1}})->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Promote)->ArgsProduct({{16, 256}, {0, 1}})->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace kvtier::hw
