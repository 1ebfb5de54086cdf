// StoreBackend on the tiered store's CPU reference: the scheduler serves requests while a TieredStore of
// real pages repeats its cache calls. The store must end holding every block where the scheduler's cache
// does, having made the same events, and transfers.csv's rows must carry exactly the bytes those events
// moved: one row per load and tier, one per stored block.
#include "hw/serve/store_backend.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <thread>

#include "hw/store/host_memory_pages.h"
#include "hw/store/tiered_store_test_support.h"
#include "sim/serving/scheduler.h"
#include "sim/workload/replay.h"

namespace kvtier::hw {
namespace {

using namespace testing;

// The requests of a list, all ready at once.
class RequestList : public RequestStream {
 public:
  explicit RequestList(std::vector<Request> requests) : requests_(std::move(requests)) {}
  bool next(Request& out) override {
    if (next_ == requests_.size()) return false;
    out = requests_[next_++];
    return true;
  }
  int64_t skipped_lines() const override { return 0; }
  int64_t block_tokens() const override { return kvtier::testing::kBlockTokens; }
  std::string location() const override { return "request " + std::to_string(next_); }

 private:
  std::vector<Request> requests_;
  size_t next_ = 0;
};

std::vector<Request> decoding_requests() {
  std::vector<Request> requests = kvtier::testing::random_requests(300, 8, 6, 17);
  for (Request& r : requests) r.output_tokens = 1 + static_cast<int64_t>(r.id % 9);  // decode KV grows
  return requests;
}

// Serves every request to the end; steps take no time, loads have landed when they start.
void serve(Scheduler& scheduler) {
  for (int iteration = 0; !scheduler.finished(); ++iteration) {
    ASSERT_LT(iteration, 100000) << "the scheduler does not finish";
    const Decision& d = scheduler.decide();
    if (d.kind == Decision::Kind::kStep) scheduler.finish_step();
    scheduler.end_iteration();
  }
}

// The bytes the cache model's events of `kinds` from `from` to `to` moved over the link (a copy out of HBM
// counts what it writes, any other what it reads: the bytes in the lower tier's layout).
double modelled_bytes(const TieredCache& cache, std::initializer_list<CacheEventKind> kinds, int from, int to) {
  double bytes = 0;
  for (CacheEventKind kind : kinds) {
    const TrafficTotals::Flow& f = cache.traffic().flow(kind, from, to);
    bytes += static_cast<double>(from == 0 ? f.to_bytes : f.from_bytes);
  }
  return bytes;
}

// The store's own copies per path carry what the cache model moved over the same links.
void expect_store_paths_match_the_model(const TieredStore& store, const TieredCache& cache) {
  const auto path_bytes = [&](TransferPath path) {
    return static_cast<double>(store.transfers()[static_cast<size_t>(path)].bytes);
  };
  const std::initializer_list<CacheEventKind> stores = {CacheEventKind::kDemote, CacheEventKind::kWriteThrough};
  EXPECT_EQ(path_bytes(TransferPath::kOffload), modelled_bytes(cache, stores, 0, 1) + modelled_bytes(cache, stores, 0, 2));
  EXPECT_EQ(path_bytes(TransferPath::kNvmePut), modelled_bytes(cache, stores, 0, 2) + modelled_bytes(cache, stores, 1, 2));
  EXPECT_EQ(path_bytes(TransferPath::kNvmeGet), modelled_bytes(cache, {CacheEventKind::kPromote}, 2, 0));
  EXPECT_EQ(path_bytes(TransferPath::kReload), modelled_bytes(cache, {CacheEventKind::kPromote}, 1, 0) +
                                                   modelled_bytes(cache, {CacheEventKind::kPromote}, 2, 0));
}

// Serves requests whose decode grows through a StoreBackend on a three-tier store of `tiers`, and checks the
// store, the rows of transfers.csv and the store's copies against the scheduler's own cache model.
void serve_and_check(const std::vector<TierSpec>& tiers, DevicePages& device, const std::string& name) {
  ScratchDirectory dir(name);
  TieredStore store(tiers, device, nvme_for(tiers, dir, static_cast<uint64_t>(tiers[2].bytes_per_block())),
                    kTestOptions);
  StoreBackend backend(store);
  TieredCache cache(tiers);
  std::unique_ptr<ReplayDriver> driver = make_open_loop(std::make_unique<RequestList>(decoding_requests()), {});
  const CostModel cost =
      CostModel::fixed_prefill_rate(ModelCard{}, 1e6, static_cast<double>(tiers[0].layout.bytes_per_token()));
  SchedulerConfig config;
  config.kv_space_bytes = static_cast<double>(tiers[0].capacity_bytes);
  config.tier_conversions.assign(tiers.size(), {1e12, 1e12});
  config.tier_load_paths.assign(tiers.size(), {});
  RequestLog records;
  SchedulerState state;
  Scheduler scheduler(config, cost, cache, *driver, backend, records, state);
  serve(scheduler);

  int64_t completed = 0, preempted = 0;
  std::set<uint64_t> blocks;
  for (const Request& r : decoding_requests()) blocks.insert(r.block_ids.begin(), r.block_ids.end());
  for (const RequestRecord& r : records) {
    completed += r.completed();
    preempted += r.preemptions;
  }
  EXPECT_GT(completed, 250);
  EXPECT_GT(preempted, 0) << "decode growth should preempt, so that HBM's capacity changes";
  for (uint64_t block : blocks) {
    const PrefixHit hit = cache.lookup(std::vector<uint64_t>{block});
    EXPECT_EQ(store.resident_tier(block), hit.hit_blocks == 1 ? hit.tier_of_block[0] : -1) << "block " << block;
  }
  std::map<std::string, double> load_bytes, store_bytes;
  std::map<std::string, int64_t> store_rows;
  for (const TransferRecord& t : backend.transfers()) {
    EXPECT_LE(t.start_s, t.end_s);
    if (t.path.ends_with("->hbm")) {
      load_bytes[t.path] += t.bytes;
    } else {
      store_bytes[t.path] += t.bytes;
      ++store_rows[t.path];
    }
  }
  for (int kind = 0; kind < kCacheEventKinds; ++kind) {
    for (int from = -1; from < 3; ++from) {
      for (int to = -1; to < 3; ++to) {
        const auto k = static_cast<CacheEventKind>(kind);
        const TrafficTotals::Flow& model = cache.traffic().flow(k, from, to);
        EXPECT_EQ(store.cache().traffic().flow(k, from, to).blocks, model.blocks)
            << event_kind_name(k) << " " << from << "->" << to;
      }
    }
  }
  const auto flow = [&](CacheEventKind k, int from, int to) { return cache.traffic().flow(k, from, to); };
  ASSERT_GT(flow(CacheEventKind::kPromote, 1, 0).blocks, 0);
  ASSERT_GT(flow(CacheEventKind::kPromote, 2, 0).blocks, 0);
  EXPECT_EQ(load_bytes["dram->hbm"], static_cast<double>(flow(CacheEventKind::kPromote, 1, 0).from_bytes));
  EXPECT_EQ(load_bytes["nvme->hbm"], static_cast<double>(flow(CacheEventKind::kPromote, 2, 0).from_bytes));
  const int64_t hbm_to_dram =
      flow(CacheEventKind::kDemote, 0, 1).blocks + flow(CacheEventKind::kWriteThrough, 0, 1).blocks;
  EXPECT_GT(hbm_to_dram, 0);
  EXPECT_EQ(store_rows["hbm->dram"], hbm_to_dram);
  EXPECT_EQ(store_bytes["hbm->dram"], static_cast<double>(hbm_to_dram * tiers[1].bytes_per_block()));
  expect_store_paths_match_the_model(store, cache);
}

TEST(StoreBackend, TheStoreEndsWhereTheSchedulersCacheEnds) {
  HostMemoryPages device(10 + kSpare, kPageBytes);
  serve_and_check(tier_configs(10, 14, 20)[0].tiers, device, "store-backend");
}

// bf16 in HBM, int4 below: every row and every copy of the store carries the packed 1,920 bytes of a
// block, as the simulator counts a 4-bit tier's links.
TEST(StoreBackend, Int4TiersMoveAndReportPackedBlocks) {
  const std::vector<TierSpec> tiers = tier_configs(10, 14, 20, int4_layouts())[0].tiers;
  ASSERT_EQ(tiers[1].bytes_per_block(), static_cast<int64_t>(kInt4TestPackedBytes));
  HostMemoryPages device(10 + kSpare, kInt4TestPageBytes);
  serve_and_check(tiers, device, "store-backend-int4");
}

// Device pages whose offloads take 60 ms and reloads 20 ms, so that each copy's span can be told apart.
class SlowCopies : public HostMemoryPages {
 public:
  using HostMemoryPages::HostMemoryPages;
  void offload(std::span<const int64_t> pages, std::span<std::byte* const> host) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
    HostMemoryPages::offload(pages, host);
  }
  void reload(std::span<const int64_t> pages, std::span<std::byte* const> host) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    HostMemoryPages::reload(pages, host);
  }
};

// An admission that offloads two blocks to make room and reloads two: each stored block's row lasts the one
// batched offload (both rows the same span), the load's row the batched reload after it, not the whole call;
// all three rows are for the admitted request.
TEST(StoreBackend, EachRowSpansTheBatchedCopiesThatMovedIt) {
  const std::vector<TierSpec> tiers = {tier(Medium::kHbm, 2), tier(Medium::kDram, 4)};
  SlowCopies device(2 + kSpare, kPageBytes);
  TieredStore store(tiers, device, nullptr, kTestOptions);
  StoreBackend backend(store);
  const std::vector<uint64_t> first = {1, 2}, second = {3, 4};
  backend.cache_admitted(1, first, {false, false});
  backend.cache_released(1);
  backend.cache_admitted(2, second, {false, false});  // offloads 1 and 2
  backend.cache_released(2);
  const size_t before = backend.transfers().size();
  const std::vector<uint64_t> again = {1, 2};
  const double call_start = backend.now();
  backend.cache_admitted(3, again, {false, false});  // offloads 3 and 4 in one batch, then reloads 1 and 2
  const double call_end = backend.now();
  std::vector<TransferRecord> rows(backend.transfers().begin() + static_cast<std::ptrdiff_t>(before),
                                   backend.transfers().end());
  ASSERT_EQ(rows.size(), 3u);
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
  EXPECT_EQ(rows[0].path, "dram->hbm");
  EXPECT_EQ(rows[1].path, "hbm->dram");
  EXPECT_EQ(rows[2].path, "hbm->dram");
  EXPECT_EQ(rows[1].start_s, rows[2].start_s);
  EXPECT_EQ(rows[1].end_s, rows[2].end_s);
  EXPECT_GE(rows[1].seconds(), 0.060);
  EXPECT_LT(rows[1].seconds(), 0.075) << "the offload's span, without the reload (80 ms with it)";
  EXPECT_GE(rows[0].seconds(), 0.020);
  EXPECT_LT(rows[0].seconds(), 0.055) << "the reload's span, without the offload";
  EXPECT_GE(rows[0].start_s, rows[1].end_s) << "a batch offloads before it reloads";
  EXPECT_GE(rows[1].start_s, call_start);
  EXPECT_LE(rows[0].end_s, call_end);
  for (const TransferRecord& row : rows) EXPECT_EQ(row.request, 3) << "request 3's admission moved them";
}

}  // namespace
}  // namespace kvtier::hw
