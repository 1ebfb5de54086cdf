#include "hw/store/hbm_kv_cache.h"

#include "hw/store/gpu_memory.h"
#include "hw/store/store_error.h"

namespace kvtier::hw {

namespace {
constexpr int64_t kPageAlignment = 256;
}

HbmKvCache::HbmKvCache(std::span<const int64_t> page_bytes, int64_t pages)
    : pages_(static_cast<uint64_t>(pages)) {
  if (page_bytes.empty() || pages <= 0) {
    throw StoreError(StoreErrc::kBadRequest, "an HBM KV cache needs at least one layer group and one page");
  }
  for (int64_t bytes : page_bytes) {
    const int64_t stride = (bytes + kPageAlignment - 1) / kPageAlignment * kPageAlignment;
    memory_.push_back(allocate_device_region(static_cast<uint64_t>(stride * pages)));
    groups_.push_back(PageGroup{memory_.back().data(), pages, stride, bytes});
  }
  validate_page_groups(groups_);
}

std::optional<std::vector<int64_t>> HbmKvCache::allocate(int64_t count) {
  auto slots = pages_.allocate(static_cast<uint64_t>(count));
  if (!slots) return std::nullopt;
  return std::vector<int64_t>(slots->begin(), slots->end());
}

void HbmKvCache::release(std::span<const int64_t> page_ids) {
  for (int64_t page : page_ids) pages_.release(static_cast<uint64_t>(page));
}

}  // namespace kvtier::hw
