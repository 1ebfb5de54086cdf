#include "hw/store/offload_engine.h"

#include <algorithm>
#include <string>

#include "hw/store/block_file.h"
#include "hw/store/gpu_memory.h"
#include "hw/kernels/kernels_gpu.h"
#include "hw/store/store_error.h"

namespace kvtier::hw {

OffloadEngine::Direction::Direction(uint64_t chunk_bytes, uint64_t max_pages)
    : staging{gpu::DeviceBuffer<std::byte>(chunk_bytes), gpu::DeviceBuffer<std::byte>(chunk_bytes)},
      device_ids(max_pages) {
  // Both staging buffers start out drained.
  for (gpu::Event& event : drained) event.record(copies.get());
  done.record(copies.get());
}

OffloadEngine::OffloadEngine(const HbmKvCache& cache, const OffloadEngineOptions& options)
    : groups_(cache.groups().begin(), cache.groups().end()),
      staged_bytes_(static_cast<uint64_t>(cache.staged_page_bytes())),
      host_pitch_(options.host_pitch == 0 ? staged_bytes_ : options.host_pitch),
      pages_per_chunk_(std::max<uint64_t>(1, options.chunk_bytes / staged_bytes_)),
      offload_(pages_per_chunk_ * staged_bytes_, static_cast<uint64_t>(cache.pages())),
      reload_(pages_per_chunk_ * staged_bytes_, static_cast<uint64_t>(cache.pages())) {
  if (host_pitch_ < staged_bytes_) {
    throw StoreError(StoreErrc::kBadRequest, "host pages of " + std::to_string(host_pitch_) +
                                                 " bytes cannot hold a staged page of " +
                                                 std::to_string(staged_bytes_) + " bytes");
  }
}

void OffloadEngine::upload_page_ids(Direction& direction, std::span<const int64_t> page_ids) {
  const int64_t pages = groups_.front().pool_pages;
  if (page_ids.size() > direction.device_ids.size()) {
    throw StoreError(
        StoreErrc::kBadRequest,
        std::to_string(page_ids.size()) + " pages in one transfer; the cache holds " + std::to_string(pages));
  }
  for (int64_t page : page_ids) {
    if (page < 0 || page >= pages) {
      throw StoreError(StoreErrc::kBadRequest, "page id " + std::to_string(page) + " outside a cache of " +
                                                   std::to_string(pages) + " pages");
    }
  }
  // From pageable memory the runtime stages the ids before returning, so the caller's span may go
  // away at once; the kernels that read device_ids run after this copy on the same stream.
  KVTIER_GPU_CHECK(gpuMemcpyAsync(direction.device_ids.data(), page_ids.data(), page_ids.size_bytes(),
                                  gpuMemcpyHostToDevice, direction.kernels.get()));
}

OffloadEngine::HostForm OffloadEngine::host_form(const PagePacking* packing) const {
  if (packing == nullptr) return {nullptr, staged_bytes_, host_pitch_};
  if (packing->page_bytes() != staged_bytes_) {
    throw StoreError(StoreErrc::kBadRequest, "a packing of " + std::to_string(packing->page_bytes()) +
                                                 "-byte pages for a cache of " + std::to_string(staged_bytes_) +
                                                 "-byte pages");
  }
  return {packing, packing->packed_bytes(), round_up_to_io(packing->packed_bytes())};
}

std::byte* OffloadEngine::crossing_buffer(Direction& direction, int buffer, const HostForm& form) const {
  if (form.packing == nullptr) return direction.staging[buffer].data();
  // A packed page is smaller than its staged page, so a buffer of the staging's size holds a chunk.
  if (direction.packed[buffer].size() == 0) {
    direction.packed[buffer] = gpu::DeviceBuffer<std::byte>(direction.staging[buffer].size());
  }
  return direction.packed[buffer].data();
}

void OffloadEngine::copy_host_runs(std::byte* device, std::span<std::byte* const> host_pages,
                                   TransferDirection direction, const HostForm& form, gpuStream_t stream) const {
  size_t first = 0;
  while (first < host_pages.size()) {
    size_t end = first + 1;
    while (end < host_pages.size() && host_pages[end] == host_pages[end - 1] + form.pitch) ++end;
    std::byte* pages = device + first * form.bytes;
    if (direction == TransferDirection::kGather) {
      copy_rows_async(host_pages[first], form.pitch, pages, form.bytes, form.bytes, end - first,
                      gpuMemcpyDeviceToHost, stream);
    } else {
      copy_rows_async(pages, form.bytes, host_pages[first], form.pitch, form.bytes, end - first,
                      gpuMemcpyHostToDevice, stream);
    }
    first = end;
  }
}

void OffloadEngine::offload(std::span<const int64_t> page_ids, std::span<std::byte* const> host_pages,
                            gpuEvent_t ready) {
  offload_chunks(page_ids, host_pages, ready, host_form(nullptr));
}

void OffloadEngine::offload_packed(const PagePacking& packing, std::span<const int64_t> page_ids,
                                   std::span<std::byte* const> host_pages) {
  offload_chunks(page_ids, host_pages, nullptr, host_form(&packing));
}

void OffloadEngine::reload(std::span<const int64_t> page_ids, std::span<std::byte* const> host_pages) {
  reload_chunks(page_ids, host_pages, host_form(nullptr));
}

void OffloadEngine::reload_packed(const PagePacking& packing, std::span<const int64_t> page_ids,
                                  std::span<std::byte* const> host_pages) {
  reload_chunks(page_ids, host_pages, host_form(&packing));
}

void OffloadEngine::offload_chunks(std::span<const int64_t> page_ids, std::span<std::byte* const> host_pages,
                                   gpuEvent_t ready, const HostForm& form) {
  if (page_ids.size() != host_pages.size()) {
    throw StoreError(StoreErrc::kBadRequest, "offload: one host page is needed per page id");
  }
  Direction& d = offload_;
  upload_page_ids(d, page_ids);
  if (ready != nullptr) KVTIER_GPU_CHECK(gpuStreamWaitEvent(d.kernels.get(), ready, 0));
  for (uint64_t first = 0, chunk = 0; first < page_ids.size(); first += pages_per_chunk_, ++chunk) {
    const uint64_t count = std::min<uint64_t>(pages_per_chunk_, page_ids.size() - first);
    const int buffer = static_cast<int>(chunk % 2);
    std::byte* crossing = crossing_buffer(d, buffer, form);
    KVTIER_GPU_CHECK(gpuStreamWaitEvent(d.kernels.get(), d.drained[buffer].get(), 0));
    copy_pages(TransferDirection::kGather, groups_, d.device_ids.data() + first, static_cast<int64_t>(count),
               d.staging[buffer].data(), d.kernels.get());
    if (form.packing != nullptr) {
      int4_group_quantize(form.packing->params, reinterpret_cast<const uint16_t*>(d.staging[buffer].data()),
                          reinterpret_cast<uint8_t*>(crossing), static_cast<int64_t>(count) * form.packing->rows,
                          d.kernels.get());
    }
    d.filled[buffer].record(d.kernels.get());
    KVTIER_GPU_CHECK(gpuStreamWaitEvent(d.copies.get(), d.filled[buffer].get(), 0));
    copy_host_runs(crossing, host_pages.subspan(first, count), TransferDirection::kGather, form, d.copies.get());
    d.drained[buffer].record(d.copies.get());
  }
  d.done.record(d.copies.get());
}

void OffloadEngine::reload_chunks(std::span<const int64_t> page_ids, std::span<std::byte* const> host_pages,
                                  const HostForm& form) {
  if (page_ids.size() != host_pages.size()) {
    throw StoreError(StoreErrc::kBadRequest, "reload: one host page is needed per page id");
  }
  Direction& d = reload_;
  upload_page_ids(d, page_ids);
  for (uint64_t first = 0, chunk = 0; first < page_ids.size(); first += pages_per_chunk_, ++chunk) {
    const uint64_t count = std::min<uint64_t>(pages_per_chunk_, page_ids.size() - first);
    const int buffer = static_cast<int>(chunk % 2);
    std::byte* crossing = crossing_buffer(d, buffer, form);
    // Here "drained" means the scatter has emptied the buffer, so the next copy may refill it.
    KVTIER_GPU_CHECK(gpuStreamWaitEvent(d.copies.get(), d.drained[buffer].get(), 0));
    copy_host_runs(crossing, host_pages.subspan(first, count), TransferDirection::kScatter, form, d.copies.get());
    d.filled[buffer].record(d.copies.get());
    KVTIER_GPU_CHECK(gpuStreamWaitEvent(d.kernels.get(), d.filled[buffer].get(), 0));
    if (form.packing != nullptr) {
      int4_group_dequantize(form.packing->params, reinterpret_cast<const uint8_t*>(crossing),
                            reinterpret_cast<uint16_t*>(d.staging[buffer].data()),
                            static_cast<int64_t>(count) * form.packing->rows, d.kernels.get());
    }
    copy_pages(TransferDirection::kScatter, groups_, d.device_ids.data() + first, static_cast<int64_t>(count),
               d.staging[buffer].data(), d.kernels.get());
    d.drained[buffer].record(d.kernels.get());
  }
  d.done.record(d.kernels.get());
}

void OffloadEngine::synchronize() const {
  offload_.done.synchronize();
  reload_.done.synchronize();
}

}  // namespace kvtier::hw
