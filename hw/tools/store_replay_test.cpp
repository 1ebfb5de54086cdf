// kvtier-hw replay on the CPU reference of the store's HBM pages: --verify through bf16 tiers and through
// int4 lower tiers under bf16 HBM, where the patterns must survive int4 and the NVMe file hold int4 blocks.
#include "hw/tools/store_replay.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <numeric>

#include "hw/store/host_memory_pages.h"
#include "hw/store/store_format.h"

namespace kvtier::hw {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kRequests = 30;

// A scratch directory for the tier file and the NVMe store's file, removed afterwards.
class ReplayDirectory {
 public:
  explicit ReplayDirectory(const std::string& name)
      : path_(fs::temp_directory_path() / ("kvtier-replay-test-" + std::to_string(::getpid()) + "-" + name)) {
    fs::create_directories(path_);
  }
  ~ReplayDirectory() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

  std::string write_tiers(const std::string& lower_kv, bool nvme) const {
    const fs::path file = path_ / "tiers.yaml";
    std::ofstream out(file);
    out << "tiers:\n"
        << "  - {medium: hbm, capacity_blocks: 4, kv: bf16, policy: lru}\n"
        << "  - {medium: dram, capacity_blocks: 6, kv: " << lower_kv << ", policy: lru}\n";
    if (nvme) out << "  - {medium: nvme, capacity_blocks: 12, kv: " << lower_kv << ", policy: lru}\n";
    return file.string();
  }

  // A Mooncake trace of kRequests requests cycling through three prompts of one 512-token hash block:
  // each request keeps its first 4 16-token blocks (HBM's capacity), and the three prompts' 12 blocks
  // overflow HBM and DRAM, so that every tier serves hits.
  std::string write_trace() const {
    const fs::path file = path_ / "trace.jsonl";
    std::ofstream out(file);
    for (int i = 0; i < kRequests; ++i) {
      out << R"({"timestamp": )" << i << R"(, "input_length": 512, "output_length": 16, "hash_ids": [)"
          << i % 3 << "]}\n";
    }
    return file.string();
  }

 private:
  fs::path path_;
};

// The CPU reference, which also notes the largest file in `directory` whenever a page leaves HBM (the
// NVMe store's file exists only during the replay).
class WatchingPages : public HostMemoryPages {
 public:
  WatchingPages(int64_t pages, uint64_t page_bytes, fs::path directory)
      : HostMemoryPages(pages, page_bytes), directory_(std::move(directory)) {}

  void offload(std::span<const int64_t> pages, std::span<std::byte* const> host_pages) override {
    note_files();
    HostMemoryPages::offload(pages, host_pages);
  }
  void offload_packed(const PagePacking& packing, std::span<const int64_t> pages,
                      std::span<std::byte* const> host_pages) override {
    note_files();
    HostMemoryPages::offload_packed(packing, pages, host_pages);
  }

  static inline uint64_t largest_file_bytes = 0;

 private:
  void note_files() const {
    for (const fs::directory_entry& entry : fs::directory_iterator(directory_)) {
      if (entry.path().extension() == ".store") {
        largest_file_bytes = std::max<uint64_t>(largest_file_bytes, entry.file_size());
      }
    }
  }
  fs::path directory_;
};

// llama-3.1-8b in 16-token blocks: bf16 is 32 layers x 2 (K, V) x 8 heads x 128 values x 2 bytes x 16
// tokens; int4 (group 32, fp16 scale and zero) 64 bytes of values and 4 x 4 of scales and zeros per
// 128 values.
constexpr uint64_t kBf16BlockBytes = 32 * 2 * 8 * 128 * 2 * 16;  // 2 MiB
constexpr uint64_t kInt4BlockBytes = 32 * 2 * 8 * 80 * 16;       // 640 KiB
constexpr int64_t kSpare = 8;

ReplayOptions verifying_replay(const ReplayDirectory& dir, const std::string& tiers) {
  return {.trace = dir.write_trace(),
          .trace_format = "mooncake",
          .tiers = tiers,
          .block_tokens = 16,
          .spare_blocks = kSpare,
          .directory = dir.path().string(),
          .requests = 0,
          .verify = true};
}

ReplayReport replay_on_cpu(const ReplayOptions& options) {
  WatchingPages::largest_file_bytes = 0;
  return run_replay(options, [&](std::span<const int64_t> page_bytes, int64_t pages) {
    const int64_t bytes = std::accumulate(page_bytes.begin(), page_bytes.end(), int64_t{0});
    return std::make_unique<WatchingPages>(pages, static_cast<uint64_t>(bytes), options.directory);
  });
}

// Every block of every request was checked (each request keeps its first 4 blocks, HBM's capacity),
// none differed, and the lower tiers served hits, so blocks came back through them.
void expect_verified(const ReplayReport& report, size_t tiers) {
  ASSERT_EQ(report.tiers.size(), tiers);
  EXPECT_EQ(report.requests, kRequests);
  EXPECT_EQ(report.verified_blocks, kRequests * 4);
  EXPECT_EQ(report.mismatched_blocks, 0);
  EXPECT_TRUE(report.hits_agree());
  for (size_t t = 1; t < tiers; ++t) EXPECT_GT(report.store_hits[t].blocks, 0) << "tier " << t;
}

TEST(StoreReplay, VerifiesBf16Tiers) {
  const ReplayDirectory dir("bf16");
  const ReplayReport report = replay_on_cpu(verifying_replay(dir, dir.write_tiers("bf16", true)));
  EXPECT_EQ(report.page_bytes, kBf16BlockBytes);
  expect_verified(report, 3);
  EXPECT_EQ(WatchingPages::largest_file_bytes, kStoreHeaderBytes + kBf16BlockBytes * (12 + kSpare));
}

TEST(StoreReplay, VerifiesInt4Dram) {
  const ReplayDirectory dir("int4-dram");
  const ReplayReport report = replay_on_cpu(verifying_replay(dir, dir.write_tiers("int4", false)));
  EXPECT_EQ(report.page_bytes, kBf16BlockBytes);
  expect_verified(report, 2);
  const PathTotals& offloads = report.transfers[static_cast<size_t>(TransferPath::kOffload)];
  EXPECT_GT(offloads.blocks, 0);
  EXPECT_EQ(offloads.bytes, static_cast<uint64_t>(offloads.blocks) * kInt4BlockBytes);
}

// The NVMe file holds int4 blocks: its slots are the int4 layout's bytes per block, not HBM's page.
TEST(StoreReplay, VerifiesInt4DramAndNvme) {
  const ReplayDirectory dir("int4-nvme");
  const ReplayReport report = replay_on_cpu(verifying_replay(dir, dir.write_tiers("int4", true)));
  expect_verified(report, 3);
  EXPECT_EQ(WatchingPages::largest_file_bytes, kStoreHeaderBytes + kInt4BlockBytes * (12 + kSpare));
}

// An LMCache configuration as the tier file: its chunk_size (16) is the block size when --block-tokens is
// left at 0, and its CPU buffer (0.0234375 GB = 24 MiB, 12 blocks of 2 MiB, the three prompts) and disk
// (the same) are both written through from HBM, pages the store copies unchanged. The CPU buffer, first
// below HBM and holding every prompt, serves every hit.
TEST(StoreReplay, VerifiesAnLmcacheConfiguration) {
  const ReplayDirectory dir("lmcache");
  const fs::path file = dir.path() / "lmcache.yaml";
  std::ofstream(file) << "chunk_size: 16\nlocal_cpu: true\nmax_local_cpu_size: 0.0234375\n"
                         "local_disk: file:///unused/\nmax_local_disk_size: 0.0234375\n"
                         "extra_config: {kvtier_hbm: {capacity_blocks: 4, kv: bf16}}\n";
  ReplayOptions options = verifying_replay(dir, file.string());
  options.block_tokens = 0;
  const ReplayReport report = replay_on_cpu(options);
  EXPECT_EQ(report.block_tokens, 16);
  EXPECT_EQ(report.page_bytes, kBf16BlockBytes);
  ASSERT_EQ(report.tiers.size(), 3u);
  EXPECT_EQ(report.tiers[1].capacity_blocks(), 12);
  EXPECT_EQ(report.tiers[2].capacity_blocks(), 12);
  EXPECT_EQ(report.verified_blocks, kRequests * 4);
  EXPECT_EQ(report.mismatched_blocks, 0);
  EXPECT_TRUE(report.hits_agree());
  EXPECT_EQ(report.store_hits[1].blocks, (kRequests - 3) * 4);  // every request after the first three
  EXPECT_EQ(report.events.flow(CacheEventKind::kWriteThrough, 0, 1).blocks, 12);
  EXPECT_EQ(report.events.flow(CacheEventKind::kWriteThrough, 0, 2).blocks, 12);
}

}  // namespace
}  // namespace kvtier::hw
