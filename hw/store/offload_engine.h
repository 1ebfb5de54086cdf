// Batched offload (HBM -> pinned DRAM) and reload (pinned DRAM -> HBM) of KV pages, overlapped.
//
// Offload gathers a chunk of pages from every layer-group pool into a device staging buffer with one
// kernel, then moves the whole chunk to the host with one copy (a 2D copy when host pages are padded
// to 4 KiB), instead of one copy per page (7x slower at 16 KiB on the H200: docs/hardware-mode.md). Reload is
// the mirror: one host-to-device copy per chunk, then one scatter kernel. Each direction has two staging
// buffers and its own kernel stream and copy stream, linked by events, so the gather of chunk i+1 runs while
// chunk i crosses PCIe, and an offload and a reload issued together use both DMA directions at once.
//
// Calls enqueue work and return; synchronize() waits. Compute can be overlapped through events:
// offload() waits for a caller's event (e.g. "the layer's KV is written") before gathering, and
// reload_done() is an event that compute can wait on before reading the reloaded pages.
//
// Host pages are addressed individually (they come from a PagePool); pages that sit `host_pitch`
// apart are moved by one copy. REQUIRES: host pages are pinned, each at least staged_page_bytes long.
//
// The packed calls (page_packing.h) add one kernel per chunk on the kernel stream: after the gather, the
// chunk's pages are quantized into a second staging buffer of packed pages, and only those cross PCIe;
// a reload copies packed pages up and dequantizes them into the staging buffer before the scatter. Their
// host pages hold packed_bytes() each, and those round_up_to_io(packed_bytes()) apart move by one copy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "hw/gpu/device_buffer.h"
#include "hw/store/hbm_kv_cache.h"
#include "hw/store/memory_region.h"
#include "hw/store/page_packing.h"

namespace kvtier::hw {

struct OffloadEngineOptions {
  uint64_t chunk_bytes = 32ull << 20;  // staging buffer size; >= 16 MiB copies run at peak PCIe rate
  uint64_t host_pitch = 0;             // distance between consecutive host pages; 0 = staged_page_bytes
};

class OffloadEngine {
 public:
  OffloadEngine(const HbmKvCache& cache, const OffloadEngineOptions& options);

  // Copies page_ids[i] of the cache to host_pages[i]. Waits first for `ready` when it is not null.
  void offload(std::span<const int64_t> page_ids, std::span<std::byte* const> host_pages,
               gpuEvent_t ready = nullptr);
  // Copies host_pages[i] into page page_ids[i] of the cache.
  void reload(std::span<const int64_t> page_ids, std::span<std::byte* const> host_pages);
  // The same with host pages packed. REQUIRES besides: packing.page_bytes() == staged_page_bytes
  // (else StoreError kBadRequest).
  void offload_packed(const PagePacking& packing, std::span<const int64_t> page_ids,
                      std::span<std::byte* const> host_pages);
  void reload_packed(const PagePacking& packing, std::span<const int64_t> page_ids,
                     std::span<std::byte* const> host_pages);

  // Recorded after the last enqueued offload / reload has completed its final copy or scatter.
  gpuEvent_t offload_done() const { return offload_.done.get(); }
  gpuEvent_t reload_done() const { return reload_.done.get(); }
  void synchronize() const;

  uint64_t pages_per_chunk() const { return pages_per_chunk_; }

 private:
  // One direction's resources: double-buffered staging, a kernel stream, a copy stream, and events
  // marking when each staging buffer was filled and when it was drained.
  struct Direction {
    explicit Direction(uint64_t chunk_bytes, uint64_t max_pages);
    gpu::DeviceBuffer<std::byte> staging[2];
    gpu::DeviceBuffer<int64_t> device_ids;
    gpu::Stream kernels;
    gpu::Stream copies;
    gpu::Event filled[2];
    gpu::Event drained[2];
    gpu::Event done;
    gpu::DeviceBuffer<std::byte> packed[2];  // allocated by the first packed call
  };
  // What crosses to the host: staged pages, or packed ones.
  struct HostForm {
    const PagePacking* packing;  // null: staged pages as they are
    uint64_t bytes;              // per page
    uint64_t pitch;              // between host pages that one copy moves
  };

  HostForm host_form(const PagePacking* packing) const;
  void offload_chunks(std::span<const int64_t> page_ids, std::span<std::byte* const> host_pages, gpuEvent_t ready,
                      const HostForm& form);
  void reload_chunks(std::span<const int64_t> page_ids, std::span<std::byte* const> host_pages,
                     const HostForm& form);
  void upload_page_ids(Direction& direction, std::span<const int64_t> page_ids);
  // The buffer of `direction` that crosses PCIe for chunk buffer `buffer`.
  std::byte* crossing_buffer(Direction& direction, int buffer, const HostForm& form) const;
  // Moves host_pages.size() pages between `device` and host pages, one copy per run of evenly spaced pages.
  void copy_host_runs(std::byte* device, std::span<std::byte* const> host_pages, TransferDirection direction,
                      const HostForm& form, gpuStream_t stream) const;

  std::vector<PageGroup> groups_;
  uint64_t staged_bytes_;
  uint64_t host_pitch_;
  uint64_t pages_per_chunk_;
  Direction offload_;
  Direction reload_;
};

}  // namespace kvtier::hw
