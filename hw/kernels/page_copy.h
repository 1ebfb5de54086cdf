// Group-aware page gather and scatter between a paged KV cache and a contiguous staging buffer.
//
// A paged cache keeps each layer group in its own pool: a bf16 group's pages and a packed-uint8
// (4-bit) group's pages have different sizes and strides. Moving a block of tokens to the host means
// collecting that block's page from every group into one contiguous staging buffer (gather), and a
// reload does the reverse (scatter), so that the host side makes one large copy instead of one per page
// (one copy per 16 KiB page is 7x slower on the H200: docs/hardware-mode.md).
//
// Staging layout (page-major): the i-th listed page occupies bytes [i * S, (i + 1) * S) of the staging
// buffer, S = staged_page_bytes(groups), and within it the groups follow in order, group g at offset
// sum of page_bytes of groups before g. Bytes are copied as opaque bytes: NaN patterns, -0 and 0xFF come
// back exactly. The GPU kernel uses 16-byte vectors where source and destination are mutually aligned and
// narrower accesses at ragged edges; copy_pages_reference is the plain C++ definition it must match.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace kvtier {
struct KvLayout;  // kv_layout.h; declared here so that kernel sources need not parse yaml-cpp
}

namespace kvtier::hw {

// The kernel takes the group table by value; eight groups cover every precision map (boundary, body,
// boundary) with room to spare.
inline constexpr int kMaxPageGroups = 8;

// One layer group of a paged KV cache.
struct PageGroup {
  std::byte* pool = nullptr;  // [pool_pages, page_stride] bytes
  int64_t pool_pages = 0;     // pages the pool holds; page ids must be below it
  int64_t page_stride = 0;    // bytes from one page to the next in the pool
  int64_t page_bytes = 0;     // bytes of each page that hold cache data (<= page_stride)
};

enum class TransferDirection {
  kGather,   // pool pages -> staging (offload)
  kScatter,  // staging -> pool pages (reload)
};

// Bytes one page occupies in the staging buffer: the sum of the groups' page_bytes.
int64_t staged_page_bytes(std::span<const PageGroup> groups);

// Bytes of one page (a block of `block_tokens` tokens) in each layer group of `layout`, in layer order.
std::vector<int64_t> layout_page_bytes(const KvLayout& layout, int64_t block_tokens);

// Checks the group table: 1..kMaxPageGroups groups, page_bytes <= page_stride, a pool where there are
// bytes to move. Throws std::invalid_argument naming the group and field.
void validate_page_groups(std::span<const PageGroup> groups);

// The reference: copies every listed page of every group to or from `staging` (host memory).
// Throws std::invalid_argument on a bad group table or a page id outside a pool.
void copy_pages_reference(TransferDirection direction, std::span<const PageGroup> groups,
                          std::span<const int64_t> page_ids, std::byte* staging);

}  // namespace kvtier::hw
