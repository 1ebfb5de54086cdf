#include "hw/store/host_memory_pages.h"

#include <cstring>
#include <string>

#include "hw/store/store_error.h"

namespace kvtier::hw {
namespace {

uint64_t checked_bytes(int64_t pages, uint64_t page_bytes) {
  if (pages <= 0 || page_bytes == 0) {
    throw StoreError(StoreErrc::kBadRequest, "device pages need at least one page of at least one byte");
  }
  return static_cast<uint64_t>(pages) * page_bytes;
}

void check_lengths(std::span<const int64_t> pages, std::span<std::byte* const> host_pages) {
  if (pages.size() != host_pages.size()) {
    throw StoreError(StoreErrc::kBadRequest, std::to_string(pages.size()) + " device pages but " +
                                                 std::to_string(host_pages.size()) + " host pages");
  }
}

}  // namespace

HostMemoryPages::HostMemoryPages(int64_t pages, uint64_t page_bytes)
    : pages_(pages),
      page_bytes_(page_bytes),
      memory_(allocate_host_region(checked_bytes(pages, page_bytes))) {}

std::byte* HostMemoryPages::page(int64_t id) const {
  if (id < 0 || id >= pages_) {
    throw StoreError(StoreErrc::kBadRequest, "device page " + std::to_string(id) + " out of range [0, " +
                                                 std::to_string(pages_) + ")");
  }
  return memory_.data() + static_cast<uint64_t>(id) * page_bytes_;
}

void HostMemoryPages::offload(std::span<const int64_t> pages, std::span<std::byte* const> host_pages) {
  check_lengths(pages, host_pages);
  for (size_t i = 0; i < pages.size(); ++i) std::memcpy(host_pages[i], page(pages[i]), page_bytes_);
}

void HostMemoryPages::reload(std::span<const int64_t> pages, std::span<std::byte* const> host_pages) {
  check_lengths(pages, host_pages);
  for (size_t i = 0; i < pages.size(); ++i) std::memcpy(page(pages[i]), host_pages[i], page_bytes_);
}

void HostMemoryPages::check_packing(const PagePacking& packing) const {
  if (packing.page_bytes() != page_bytes_) {
    throw StoreError(StoreErrc::kBadRequest, "a packing of " + std::to_string(packing.page_bytes()) +
                                                 "-byte pages for device pages of " + std::to_string(page_bytes_));
  }
}

void HostMemoryPages::offload_packed(const PagePacking& packing, std::span<const int64_t> pages,
                                     std::span<std::byte* const> host_pages) {
  check_lengths(pages, host_pages);
  check_packing(packing);
  for (size_t i = 0; i < pages.size(); ++i) pack_page(packing, page(pages[i]), host_pages[i]);
}

void HostMemoryPages::reload_packed(const PagePacking& packing, std::span<const int64_t> pages,
                                    std::span<std::byte* const> host_pages) {
  check_lengths(pages, host_pages);
  check_packing(packing);
  for (size_t i = 0; i < pages.size(); ++i) unpack_page(packing, host_pages[i], page(pages[i]));
}

}  // namespace kvtier::hw
