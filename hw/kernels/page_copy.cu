// Page gather/scatter kernel. Grid mapping: blockIdx.y walks the listed pages (grid-stride past 65535),
// blockIdx.x picks a kChunkBytes chunk of that page's staged bytes; the block's threads copy the parts
// of every group that fall in the chunk, in 16-byte vectors where source and destination are mutually
// aligned, 8/4/1-byte accesses otherwise and at ragged edges. When every group is 16-byte aligned (the
// usual case), a faster path treats the chunk as one run of 16-byte words whatever group each belongs to,
// so that a small page's groups are read with all loads in flight at once instead of group after group.
#include <cstdint>

#include "hw/gpu/check.h"
#include "hw/kernels/kernels_gpu.h"

namespace kvtier::hw {
namespace {

constexpr int kThreads = 256;
constexpr int kUnroll = 4;  // vectors in flight per thread
constexpr int64_t kChunkBytes = 64 * 1024;

struct GroupTable {
  std::byte* pool[kMaxPageGroups];
  int64_t stride[kMaxPageGroups];
  int64_t bytes[kMaxPageGroups];
  int64_t staging_offset[kMaxPageGroups];
  int64_t staged_bytes;  // per page
  int count;
};

// The word-aligned path: begin and end are multiples of 16, and so is every group's offset and size.
template <TransferDirection kDirection>
__device__ void copy_chunk_in_words(const GroupTable& table, int64_t page, unsigned char* staged_page,
                                    int64_t begin, int64_t end) {
  const int64_t last = end / 16;
  for (int64_t base = begin / 16 + threadIdx.x; base < last; base += int64_t{kThreads} * kUnroll) {
    uint4 word[kUnroll];
    uint4* destination[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t i = base + int64_t{u} * kThreads;
      destination[u] = nullptr;
      if (i >= last) continue;
      const int64_t byte = i * 16;
      int g = 0;
      while (g + 1 < table.count && byte >= table.staging_offset[g + 1]) ++g;
      uint4* pool_word = reinterpret_cast<uint4*>(reinterpret_cast<unsigned char*>(table.pool[g]) +
                                                  page * table.stride[g] + (byte - table.staging_offset[g]));
      uint4* staged_word = reinterpret_cast<uint4*>(staged_page + byte);
      if constexpr (kDirection == TransferDirection::kGather) {
        word[u] = *pool_word;
        destination[u] = staged_word;
      } else {
        word[u] = *staged_word;
        destination[u] = pool_word;
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      if (destination[u] != nullptr) *destination[u] = word[u];
    }
  }
}

// Copies n words of type V; all threads of the block cooperate, kUnroll loads in flight each.
template <typename V>
__device__ void copy_words(V* dst, const V* src, int64_t n) {
  for (int64_t base = threadIdx.x; base < n; base += int64_t{kThreads} * kUnroll) {
    V word[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      int64_t i = base + int64_t{u} * kThreads;
      if (i < n) word[u] = src[i];
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      int64_t i = base + int64_t{u} * kThreads;
      if (i < n) dst[i] = word[u];
    }
  }
}

template <typename V>
__device__ void copy_with_word(unsigned char* dst, const unsigned char* src, int64_t n) {
  constexpr int64_t kWord = sizeof(V);
  int64_t head = (kWord - static_cast<int64_t>(reinterpret_cast<uintptr_t>(src) & (kWord - 1))) & (kWord - 1);
  if (head > n) head = n;
  int64_t words = (n - head) / kWord;
  int64_t tail_start = head + words * kWord;
  if (threadIdx.x < head) dst[threadIdx.x] = src[threadIdx.x];
  copy_words(reinterpret_cast<V*>(dst + head), reinterpret_cast<const V*>(src + head), words);
  if (threadIdx.x < n - tail_start) dst[tail_start + threadIdx.x] = src[tail_start + threadIdx.x];
}

__device__ void copy_bytes(unsigned char* dst, const unsigned char* src, int64_t n) {
  uintptr_t relative = reinterpret_cast<uintptr_t>(dst) ^ reinterpret_cast<uintptr_t>(src);
  if ((relative & 15) == 0) {
    copy_with_word<uint4>(dst, src, n);
  } else if ((relative & 7) == 0) {
    copy_with_word<uint2>(dst, src, n);
  } else if ((relative & 3) == 0) {
    copy_with_word<unsigned int>(dst, src, n);
  } else {
    copy_with_word<unsigned char>(dst, src, n);
  }
}

// The general path: each group's part of the chunk in the widest word its alignment allows.
template <TransferDirection kDirection>
__device__ void copy_chunk_by_group(const GroupTable& table, int64_t page, unsigned char* staged_page,
                                    int64_t chunk_begin, int64_t chunk_end) {
  for (int g = 0; g < table.count; ++g) {
    int64_t begin = chunk_begin > table.staging_offset[g] ? chunk_begin : table.staging_offset[g];
    int64_t group_end = table.staging_offset[g] + table.bytes[g];
    int64_t end = chunk_end < group_end ? chunk_end : group_end;
    if (begin >= end) continue;
    unsigned char* in_pool = reinterpret_cast<unsigned char*>(table.pool[g]) + page * table.stride[g] +
                             (begin - table.staging_offset[g]);
    if constexpr (kDirection == TransferDirection::kGather) {
      copy_bytes(staged_page + begin, in_pool, end - begin);
    } else {
      copy_bytes(in_pool, staged_page + begin, end - begin);
    }
  }
}

// pools: per group [pool_pages, stride]; page_ids: [page_count]; staging: [page_count, staged_bytes].
template <TransferDirection kDirection, bool kWordAligned>
__global__ void __launch_bounds__(kThreads)
    copy_pages_kernel(GroupTable table_by_value, const int64_t* page_ids, int64_t page_count,
                      std::byte* staging) {
  // In shared memory: the group lookup indexes the table with a run-time index.
  __shared__ GroupTable table;
  if (threadIdx.x == 0) table = table_by_value;
  __syncthreads();
  const int64_t chunk_begin = int64_t{blockIdx.x} * kChunkBytes;
  int64_t chunk_end = chunk_begin + kChunkBytes;
  if (chunk_end > table.staged_bytes) chunk_end = table.staged_bytes;
  for (int64_t p = blockIdx.y; p < page_count; p += gridDim.y) {
    const int64_t page = page_ids[p];
    unsigned char* staged_page = reinterpret_cast<unsigned char*>(staging) + p * table.staged_bytes;
    if constexpr (kWordAligned) {
      copy_chunk_in_words<kDirection>(table, page, staged_page, chunk_begin, chunk_end);
    } else {
      copy_chunk_by_group<kDirection>(table, page, staged_page, chunk_begin, chunk_end);
    }
  }
}

}  // namespace

void copy_pages(TransferDirection direction, std::span<const PageGroup> groups, const int64_t* page_ids,
                int64_t page_count, std::byte* staging, gpuStream_t stream) {
  validate_page_groups(groups);
  if (page_count < 0 || (page_count > 0 && (page_ids == nullptr || staging == nullptr))) {
    throw std::invalid_argument("copy_pages: expected page ids and a staging buffer for " +
                                std::to_string(page_count) + " pages");
  }
  GroupTable table{};
  table.count = static_cast<int>(groups.size());
  for (int g = 0; g < table.count; ++g) {
    table.pool[g] = groups[g].pool;
    table.stride[g] = groups[g].page_stride;
    table.bytes[g] = groups[g].page_bytes;
    table.staging_offset[g] = table.staged_bytes;
    table.staged_bytes += groups[g].page_bytes;
  }
  if (page_count == 0 || table.staged_bytes == 0) return;
  const int64_t chunks = (table.staged_bytes + kChunkBytes - 1) / kChunkBytes;
  if (chunks > 0x7fffffff) throw std::invalid_argument("copy_pages: pages larger than 128 TiB");
  dim3 grid(static_cast<unsigned>(chunks), static_cast<unsigned>(page_count < 65535 ? page_count : 65535));
  bool word_aligned = reinterpret_cast<uintptr_t>(staging) % 16 == 0;
  for (int g = 0; g < table.count; ++g) {
    word_aligned = word_aligned && reinterpret_cast<uintptr_t>(table.pool[g]) % 16 == 0 &&
                   table.stride[g] % 16 == 0 && table.bytes[g] % 16 == 0;
  }
  auto launch = [&](auto kernel) {
    kernel<<<grid, kThreads, 0, stream>>>(table, page_ids, page_count, staging);
  };
  if (direction == TransferDirection::kGather) {
    word_aligned ? launch(copy_pages_kernel<TransferDirection::kGather, true>)
                 : launch(copy_pages_kernel<TransferDirection::kGather, false>);
  } else {
    word_aligned ? launch(copy_pages_kernel<TransferDirection::kScatter, true>)
                 : launch(copy_pages_kernel<TransferDirection::kScatter, false>);
  }
  KVTIER_GPU_CHECK_LAUNCH("copy_pages_kernel");
}

}  // namespace kvtier::hw
