#include "hw/tools/roundtrip.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <random>

#include "sim/core/config_files.h"
#include "hw/gpu/check.h"
#include "hw/store/gpu_memory.h"
#include "hw/store/hbm_kv_cache.h"
#include "sim/core/kv_layout.h"
#include "sim/core/model_card.h"
#include "hw/store/nvme_store.h"
#include "hw/store/offload_engine.h"
#include "hw/store/page_pool.h"

namespace kvtier::hw {
namespace {

using Image = std::vector<std::vector<std::byte>>;  // per group: the host copy of its whole pool

template <typename Fn>
double seconds_of(Fn fn) {
  const auto start = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Random bytes everywhere; page 0 all 0xFF, page 1 alternating bf16 quiet NaN (0x7FC1) and -0 (0x8000).
Image planted_random_image(const HbmKvCache& cache, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Image image;
  for (const PageGroup& group : cache.groups()) {
    std::vector<std::byte> pool(static_cast<size_t>(group.pool_pages * group.page_stride));
    for (size_t i = 0; i < pool.size(); i += 8) {
      const uint64_t word = rng();
      std::memcpy(pool.data() + i, &word, std::min<size_t>(8, pool.size() - i));
    }
    std::fill_n(pool.begin(), group.page_bytes, std::byte{0xFF});
    std::byte* page1 = pool.data() + group.page_stride;
    for (int64_t i = 0; i + 1 < group.page_bytes; i += 2) {
      const uint16_t bits = (i / 2) % 2 == 0 ? 0x7FC1 : 0x8000;
      std::memcpy(page1 + i, &bits, 2);
    }
    KVTIER_GPU_CHECK(gpuMemcpy(group.pool, pool.data(), pool.size(), gpuMemcpyHostToDevice));
    image.push_back(std::move(pool));
  }
  return image;
}

Image download(const HbmKvCache& cache) {
  Image image;
  for (const PageGroup& group : cache.groups()) {
    std::vector<std::byte> pool(static_cast<size_t>(group.pool_pages * group.page_stride));
    KVTIER_GPU_CHECK(gpuMemcpy(pool.data(), group.pool, pool.size(), gpuMemcpyDeviceToHost));
    image.push_back(std::move(pool));
  }
  return image;
}

}  // namespace

RoundtripReport run_roundtrip(const RoundtripOptions& options) {
  const ModelCard model = parse_model_card(load_config(options.model, "models"));
  const KvLayout layout = resolve_kv_layout(model, options.kv);
  const std::vector<int64_t> page_bytes = layout_page_bytes(layout, options.block_tokens);
  const int64_t n = options.pages;
  // Pages [0, n) hold the originals; each comes back into page n + its id.
  HbmKvCache cache(page_bytes, 2 * n);
  const Image original = planted_random_image(cache, options.seed);
  const uint64_t staged = static_cast<uint64_t>(cache.staged_page_bytes());
  const uint64_t pitch = round_up_to_io(staged);
  PagePool host(allocate_pinned_region(static_cast<uint64_t>(n) * pitch), pitch);
  OffloadEngine engine(cache, {.host_pitch = pitch});

  std::vector<int64_t> sources(static_cast<size_t>(n));
  std::iota(sources.begin(), sources.end(), 0);
  std::shuffle(sources.begin(), sources.end(), std::mt19937_64(options.seed + 1));
  std::vector<std::byte*> host_pages;
  for (int64_t i = 0; i < n; ++i) host_pages.push_back(host.page(static_cast<uint64_t>(i)));

  RoundtripReport report{.layout = layout.name,
                         .groups = static_cast<int>(page_bytes.size()),
                         .pages = n,
                         .page_bytes = static_cast<int64_t>(staged)};
  report.offload_seconds = seconds_of([&] {
    engine.offload(sources, host_pages);
    engine.synchronize();
  });

  const std::string store_path = (std::filesystem::path(options.directory) /
                                  ("kvtier-roundtrip-" + std::to_string(::getpid()) + ".store"))
                                     .string();
  auto store =
      NvmeStore::create(store_path, {.block_bytes = staged, .capacity_blocks = static_cast<uint64_t>(n)});
  std::vector<BlockWrite> writes;
  for (int64_t i = 0; i < n; ++i)
    writes.push_back({static_cast<BlockKey>(sources[i]), {host_pages[i], staged}});
  report.nvme_write_seconds = seconds_of([&] { store->put(writes); });

  std::memset(host.page(0), 0xA5,
              static_cast<size_t>(n) * pitch);  // nothing of the first trip survives in DRAM
  // Read page id s into host page n - 1 - s, then reload it into HBM page n + s.
  std::vector<BlockRead> reads;
  std::vector<int64_t> destinations;
  std::vector<std::byte*> reload_hosts;
  for (int64_t s = 0; s < n; ++s) {
    std::byte* page = host.page(static_cast<uint64_t>(n - 1 - s));
    reads.push_back({static_cast<BlockKey>(s), {page, pitch}});
    destinations.push_back(n + s);
    reload_hosts.push_back(page);
  }
  report.nvme_read_seconds = seconds_of([&] { store->get(reads); });
  report.reload_seconds = seconds_of([&] {
    engine.reload(destinations, reload_hosts);
    engine.synchronize();
  });

  const Image back = download(cache);
  for (int64_t s = 0; s < n; ++s) {
    bool same = true;
    for (size_t g = 0; g < page_bytes.size(); ++g) {
      const int64_t stride = cache.groups()[g].page_stride;
      same = same && std::memcmp(original[g].data() + s * stride, back[g].data() + (n + s) * stride,
                                 static_cast<size_t>(page_bytes[g])) == 0;
    }
    report.mismatched_pages += same ? 0 : 1;
  }
  return report;
}

}  // namespace kvtier::hw
