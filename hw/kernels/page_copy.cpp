#include "hw/kernels/page_copy.h"

#include <cstring>
#include <stdexcept>
#include <string>

#include "sim/core/kv_layout.h"

namespace kvtier::hw {

int64_t staged_page_bytes(std::span<const PageGroup> groups) {
  int64_t total = 0;
  for (const PageGroup& g : groups) total += g.page_bytes;
  return total;
}

std::vector<int64_t> layout_page_bytes(const KvLayout& layout, int64_t block_tokens) {
  std::vector<int64_t> bytes;
  bytes.reserve(layout.groups.size());
  for (const LayerGroup& group : layout.groups) bytes.push_back(group.bytes_per_token() * block_tokens);
  return bytes;
}

void validate_page_groups(std::span<const PageGroup> groups) {
  if (groups.empty() || groups.size() > static_cast<size_t>(kMaxPageGroups)) {
    throw std::invalid_argument("page groups: expected 1 to " + std::to_string(kMaxPageGroups) +
                                " groups, got " + std::to_string(groups.size()));
  }
  for (size_t i = 0; i < groups.size(); ++i) {
    const PageGroup& g = groups[i];
    std::string where = "page group " + std::to_string(i) + ": ";
    if (g.page_bytes < 0 || g.page_stride < g.page_bytes) {
      throw std::invalid_argument(where + "expected 0 <= page_bytes <= page_stride, got page_bytes " +
                                  std::to_string(g.page_bytes) + ", page_stride " +
                                  std::to_string(g.page_stride));
    }
    if (g.page_bytes > 0 && (g.pool == nullptr || g.pool_pages <= 0)) {
      throw std::invalid_argument(where + "expected a pool with at least one page");
    }
  }
}

void copy_pages_reference(TransferDirection direction, std::span<const PageGroup> groups,
                          std::span<const int64_t> page_ids, std::byte* staging) {
  validate_page_groups(groups);
  std::byte* out = staging;
  for (int64_t page : page_ids) {
    for (const PageGroup& g : groups) {
      if (page < 0 || page >= g.pool_pages) {
        throw std::invalid_argument("page id " + std::to_string(page) + " outside a pool of " +
                                    std::to_string(g.pool_pages) + " pages");
      }
      std::byte* in_pool = g.pool + page * g.page_stride;
      if (direction == TransferDirection::kGather) {
        std::memcpy(out, in_pool, static_cast<size_t>(g.page_bytes));
      } else {
        std::memcpy(in_pool, out, static_cast<size_t>(g.page_bytes));
      }
      out += g.page_bytes;
    }
  }
}

}  // namespace kvtier::hw
