// A disk that fills up or fails under the tiered store: the error reaches the caller, and every block the
// store held keeps its bytes.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "hw/store/fault_injecting_file.h"
#include "hw/store/host_memory_pages.h"
#include "hw/store/tiered_store.h"
#include "hw/store/tiered_store_test_support.h"

namespace kvtier::hw {
namespace {

using namespace testing;

using Residency = std::map<uint64_t, int>;  // block -> tier, for every block held

Residency residency(const TieredStore& store, const std::vector<uint64_t>& blocks) {
  Residency held;
  for (uint64_t block : blocks) {
    if (store.resident_tier(block) >= 0) held[block] = store.resident_tier(block);
  }
  return held;
}

// Blocks that left the cache model's hierarchy: dropped from a tier and held by none afterwards.
class DroppedBlocks : public CacheEventSink {
 public:
  void on_event(const CacheEvent& event) override {
    if (event.kind == CacheEventKind::kDrop) dropped.insert(event.block);
  }
  std::set<uint64_t> dropped;
};

struct FailureOutcome {
  StoreErrc code{};
  Residency before;            // just before the admit that failed
  std::set<uint64_t> dropped;  // blocks the cache model discarded during that admit
  std::vector<uint64_t> known;
};

// Admits requests (placed pages get their patterns) until one throws StoreError, with a plain cache model
// beside the store to tell which blocks the failing admit was meant to discard. `before_each` runs ahead
// of every admit. Fails the test if none throws.
template <typename BeforeEach>
FailureOutcome run_until_failure(TieredStore& store, DevicePages& device, const std::vector<TierSpec>& tiers,
                                 BeforeEach before_each) {
  DevicePatterns patterns(device, 16, pattern_for(store));
  TieredCache model(tiers);
  DroppedBlocks drops;
  model.set_event_sink(&drops);
  Admission model_admission;
  FailureOutcome outcome;
  for (const Request& request : kvtier::testing::random_requests(300, 6, 8, 5)) {
    const std::vector<uint64_t>& chain = request.block_ids;
    outcome.known.insert(outcome.known.end(), chain.begin(), chain.end());
    outcome.before = residency(store, outcome.known);
    before_each(outcome.known.size());
    drops.dropped.clear();
    model.admit(chain, model_admission);
    try {
      StoreAdmission admission = store.admit(chain);
      std::vector<int64_t> pages;
      std::vector<uint64_t> blocks;
      for (size_t i = 0; i < chain.size(); ++i) {
        if (admission.source_tier[i] < 0) {
          pages.push_back(admission.hbm_pages[i]);
          blocks.push_back(chain[i]);
        }
      }
      patterns.write(pages, blocks);
      store.release(admission);
      model.release(model_admission);
    } catch (const StoreError& error) {
      outcome.code = error.code();
      for (uint64_t block : drops.dropped) {
        bool held = false;
        for (int t = 0; t < model.tier_count(); ++t) held = held || model.contains(t, block);
        if (!held) outcome.dropped.insert(block);
      }
      return outcome;
    }
  }
  ADD_FAILURE() << "no admit failed";
  return outcome;
}

// Every block held before the failed admit is still held, unless the cache model discarded it in that
// admit, and everything held reads back exactly.
void expect_nothing_lost(TieredStore& store, const FailureOutcome& outcome) {
  EXPECT_TRUE(store.failed());
  for (const auto& [block, tier] : outcome.before) {
    if (outcome.dropped.contains(block)) continue;
    EXPECT_GE(store.resident_tier(block), 0) << "block " << block << " (tier " << tier << ") was lost";
  }
  expect_every_resident_block_intact(store, outcome.known);
  const std::vector<uint64_t> next{1};
  EXPECT_THROW(store.admit(next), StoreError) << "a failed store must refuse further requests";
}

TEST(TieredStoreFailure, FullNvmeStoreSurfacesAsErrorAndLosesNothing) {
  const std::vector<TierSpec> tiers{tier(Medium::kHbm, 8), tier(Medium::kDram, 6), tier(Medium::kNvme, 16)};
  ScratchDirectory dir("full");
  HostMemoryPages device(8, kPageBytes);
  // The disk holds 4 blocks although the NVMe tier is configured for 16.
  TieredStore store(tiers, device,
                    open_nvme(dir.file("nvme.store"), {.block_bytes = kPageBytes, .capacity_blocks = 4}));
  const FailureOutcome outcome = run_until_failure(store, device, tiers, [](size_t) {});
  EXPECT_EQ(outcome.code, StoreErrc::kFull);
  expect_nothing_lost(store, outcome);
}

// A disk that breaks once the NVMe tier holds blocks, under tiers of `layouts` whose HBM pages are
// `page_bytes` and lower pages `lower_bytes`.
void expect_failed_write_loses_nothing(const TierLayouts& layouts, uint64_t page_bytes, uint64_t lower_bytes,
                                       const std::string& name) {
  const std::vector<TierSpec> tiers{tier(Medium::kHbm, 8, layouts.hbm), tier(Medium::kDram, 6, layouts.lower),
                                    tier(Medium::kNvme, 16, layouts.lower)};
  ScratchDirectory dir(name);
  HostMemoryPages device(8, page_bytes);
  const NvmeStoreOptions options{.block_bytes = lower_bytes, .capacity_blocks = 16};
  auto log = std::make_shared<IoLog>();
  auto file =
      std::make_unique<DirectFile>(dir.file("nvme.store"), NvmeStore::file_bytes(options), IoMode::kBuffered);
  TieredStore store(
      tiers, device,
      std::make_unique<NvmeStore>(std::make_unique<FaultInjectingFile>(std::move(file), log), options));
  // The disk breaks once the NVMe tier holds blocks, so there is something to lose.
  const FailureOutcome outcome = run_until_failure(store, device, tiers, [&](size_t blocks_seen) {
    if (blocks_seen >= 150) log->writes_allowed = 0;
  });
  EXPECT_EQ(outcome.code, StoreErrc::kIo);
  EXPECT_GT(std::count_if(outcome.before.begin(), outcome.before.end(),
                          [](const auto& b) { return b.second == 2; }),
            0);
  expect_nothing_lost(store, outcome);
}

TEST(TieredStoreFailure, FailedNvmeWriteSurfacesAsErrorAndLosesNothing) {
  const KvLayout flat = kvtier::testing::flat_layout(kBytesPerToken);
  expect_failed_write_loses_nothing({flat, flat}, kPageBytes, kPageBytes, "failing");
}

// The same with int4 below bf16: the undone batch leaves every packed page where the store says.
TEST(TieredStoreFailure, FailedNvmeWriteOfPackedPagesLosesNothing) {
  expect_failed_write_loses_nothing(int4_layouts(), kInt4TestPageBytes, kInt4TestPackedBytes, "failing-int4");
}

}  // namespace
}  // namespace kvtier::hw
