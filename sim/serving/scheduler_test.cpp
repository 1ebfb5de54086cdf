// The scheduler's decisions, one at a time, without SimGrid: a fake clock and fake links, hand-sized
// caches (4-token blocks of 8 bytes per token: 32 bytes a block) and a flat prefill rate of 1,000 tokens/s,
// so every expectation below is arithmetic done by hand.
#include "sim/serving/scheduler.h"

#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <set>

#include "sim/core/config_files.h"

namespace kvtier {
namespace {

constexpr int64_t kBlockTokens = 4;
constexpr int64_t kBytesPerToken = 8;
constexpr int64_t kBlockBytes = kBlockTokens * kBytesPerToken;
constexpr double kTokensPerS = 1000;

TierSpec tier(const std::string& name, int64_t blocks, int64_t bytes_per_token = kBytesPerToken) {
  LayerGroup group;
  group.layer_count = 1;
  group.bytes_per_token_per_layer = bytes_per_token;
  TierSpec spec = single_tier(KvLayout{"flat" + std::to_string(bytes_per_token), {group}}, kBlockTokens,
                              blocks * bytes_per_token * kBlockTokens, PolicyKind::kLru);
  spec.name = name;
  return spec;
}

// Issues a fixed list of requests at their arrival times and notes completions.
class ListDriver : public ReplayDriver {
 public:
  void add(Request r) { pending_.push_back(std::move(r)); }
  std::optional<double> next_ready_time() const override {
    if (pending_.empty()) return std::nullopt;
    return pending_.front().arrival_s;
  }
  Request pop_ready() override {
    Request r = pending_.front();
    pending_.pop_front();
    ++in_flight_;
    return r;
  }
  void on_complete(uint64_t request_id, double) override {
    completed.push_back(request_id);
    --in_flight_;
  }
  bool done() const override { return pending_.empty() && in_flight_ == 0; }
  ReplayCounts counts() const override { return {}; }

  std::vector<uint64_t> completed;

 private:
  std::deque<Request> pending_;
  int64_t in_flight_ = 0;
};

// A clock the test sets, and loads that finish when the test says so.
class FakeBackend : public ServingBackend {
 public:
  struct Load {
    std::vector<double> bytes_by_tier;
    uint64_t request_id = 0;
    bool done = false;
    bool cancelled = false;
  };
  struct Store {
    int from_tier, to_tier;
    double bytes;
    int64_t cause;
  };

  double now() const override { return clock; }
  LoadHandle start_load(std::span<const double> bytes_by_tier, uint64_t request_id) override {
    loads.push_back({{bytes_by_tier.begin(), bytes_by_tier.end()}, request_id});
    return static_cast<LoadHandle>(loads.size() - 1);
  }
  bool load_done(LoadHandle load) override { return loads.at(load).done; }
  // The clock moves by `admit_seconds` in each cache call, as where the call runs a load's copies.
  void cache_admitted(uint64_t, std::span<const uint64_t>, const std::vector<bool>&) override {
    clock += admit_seconds;
  }
  void cancel_load(LoadHandle load) override { loads.at(load).cancelled = true; }
  void start_store(int from_tier, int to_tier, double bytes, int64_t cause) override {
    stores.push_back({from_tier, to_tier, bytes, cause});
  }
  // A received KV is a load of no bytes from the tiers.
  LoadHandle receive_prefilled_kv(uint64_t request_id) override {
    received.push_back(request_id);
    loads.emplace_back();
    return static_cast<LoadHandle>(loads.size() - 1);
  }

  double clock = 0;
  double admit_seconds = 0;
  std::vector<Load> loads;
  std::vector<Store> stores;
  std::vector<uint64_t> received;
};

// One scheduler over its cache, driver and backend. Call start() after priming the cache and driver.
struct Harness {
  explicit Harness(std::vector<TierSpec> tiers, SchedulerConfig c = {})
      : cache(std::move(tiers)),
        cost(CostModel::fixed_prefill_rate(ModelCard{}, kTokensPerS, kBytesPerToken)),
        config(std::move(c)) {
    if (config.kv_space_bytes == 0) config.kv_space_bytes = static_cast<double>(cache.tier(0).capacity_bytes);
  }

  void start() {
    scheduler = std::make_unique<Scheduler>(config, cost, cache, driver, backend, records, state);
  }

  // Runs a decided step: the clock moves by its planned time.
  void run(const Decision& decision) {
    ASSERT_EQ(decision.kind, Decision::Kind::kStep);
    backend.clock += decision.step.seconds;
    scheduler->finish_step();
  }
  void decide_and_run() { run(scheduler->decide()); }

  TieredCache cache;
  CostModel cost;
  SchedulerConfig config;
  ListDriver driver;
  FakeBackend backend;
  RequestLog records;
  SchedulerState state;
  std::unique_ptr<Scheduler> scheduler;
};

// Blocks 1 and 2 in DRAM only: placed in HBM, then pushed out to DRAM by four others that fill it
// (HBM of 4 blocks).
void cache_blocks_1_2_in_dram_only(Harness& h) {
  Admission a;
  h.cache.admit(std::vector<uint64_t>{1, 2}, a);
  h.cache.release(a);
  h.cache.admit(std::vector<uint64_t>{11, 12, 13, 14}, a);
  h.cache.release(a);
}

// `blocks` fresh block ids from `first_id`, input filling them, arriving at `arrival_s`.
Request request(uint64_t id, uint64_t first_id, int64_t blocks, int64_t output_tokens = 1,
                double arrival_s = 0) {
  Request r;
  r.id = id;
  r.arrival_s = arrival_s;
  r.input_tokens = blocks * kBlockTokens;
  r.output_tokens = output_tokens;
  for (int64_t b = 0; b < blocks; ++b) r.block_ids.push_back(first_id + static_cast<uint64_t>(b));
  return r;
}

// A shared tier holding a fixed set of blocks, noting what is stored into it.
class SetTier : public SharedTier {
 public:
  explicit SetTier(std::set<uint64_t> held) : spec_(tier("pool", 1000)), held_(std::move(held)) {}
  const TierSpec& spec() const override { return spec_; }
  int64_t leading_run(std::span<const uint64_t> block_ids) override {
    int64_t run = 0;
    while (run < static_cast<int64_t>(block_ids.size()) && held_.contains(block_ids[run])) ++run;
    return run;
  }
  bool store(uint64_t block) override {
    stored.push_back(block);
    return held_.insert(block).second;
  }
  std::vector<uint64_t> stored;

 private:
  TierSpec spec_;
  std::set<uint64_t> held_;
};

std::vector<uint64_t> prefill_ids(const StepPlan& plan) {
  std::vector<uint64_t> ids;
  for (const PrefillChunk& c : plan.prefills) ids.push_back(c.request_id);
  return ids;
}

TEST(Scheduler, AdmitsInArrivalOrderUpToMaxRunning) {
  SchedulerConfig config;
  config.max_running = 2;
  Harness h({tier("hbm", 100)}, config);
  for (uint64_t id = 0; id < 3; ++id) h.driver.add(request(id, 100 * id, 2));
  h.start();
  const Decision& d = h.scheduler->decide();
  ASSERT_EQ(d.kind, Decision::Kind::kStep);
  EXPECT_EQ(prefill_ids(d.step), (std::vector<uint64_t>{0, 1}));
  EXPECT_EQ(h.scheduler->running_count(), 2);
  EXPECT_EQ(h.scheduler->waiting_count(), 1);
  EXPECT_EQ(h.records[2].admitted_s, -1);
}

TEST(Scheduler, ASharedTierServesThePrefixPastTheCachesHitsAndTakesWhatIsPlaced) {
  // HBM holds block 100; the shared tier 101 and 102. A request of blocks 100-104 (20 tokens) hits 100 in
  // HBM, loads 101-102 from the shared tier (64 bytes: 8 tokens), and prefills 103-104, which are then
  // stored in the shared tier, each a store of one 32-byte block from tier 0 to the shared tier (tier 1).
  SetTier shared({101, 102});
  SchedulerConfig config;
  config.shared_tier = &shared;
  Harness h({tier("hbm", 100)}, config);
  Admission warm;
  ASSERT_TRUE(h.cache.admit(std::vector<uint64_t>{100}, warm));
  h.cache.release(warm);
  h.driver.add(request(0, 100, 5));
  h.start();
  const Decision& d = h.scheduler->decide();
  EXPECT_EQ(h.records[0].hit_tokens, (std::vector<int64_t>{4, 8}));
  ASSERT_EQ(h.backend.loads.size(), 1u);
  EXPECT_EQ(h.backend.loads[0].bytes_by_tier, (std::vector<double>{0, 2.0 * kBlockBytes}));
  ASSERT_EQ(h.backend.stores.size(), 2u);
  for (const FakeBackend::Store& s : h.backend.stores) {
    EXPECT_EQ(s.from_tier, 0);
    EXPECT_EQ(s.to_tier, 1);
    EXPECT_DOUBLE_EQ(s.bytes, kBlockBytes);
  }
  // Every block placed in HBM was offered to the shared tier: 101 and 102, which it held, and 103-104.
  EXPECT_EQ(shared.stored, (std::vector<uint64_t>{101, 102, 103, 104}));
  // Nothing to prefill until the load lands; then the 8 tokens past the hits.
  ASSERT_EQ(d.kind, Decision::Kind::kWait);
  h.scheduler->end_iteration();
  h.backend.loads[0].done = true;
  const Decision& step = h.scheduler->decide();
  ASSERT_EQ(step.kind, Decision::Kind::kStep);
  ASSERT_EQ(step.step.prefills.size(), 1u);
  EXPECT_EQ(step.step.prefills[0].start_token, 12);
  EXPECT_EQ(step.step.prefills[0].tokens, 8);
}

TEST(Scheduler, ARequestThatDoesNotFitHoldsBackTheQueue) {
  // HBM holds 5 blocks: A (3) runs, B (3) does not fit beside it, and C (1), which would, waits behind B.
  Harness h({tier("hbm", 5)});
  h.driver.add(request(0, 100, 3));
  h.driver.add(request(1, 200, 3));
  h.driver.add(request(2, 300, 1));
  h.start();
  const Decision& d = h.scheduler->decide();
  ASSERT_EQ(d.kind, Decision::Kind::kStep);
  EXPECT_EQ(prefill_ids(d.step), (std::vector<uint64_t>{0}));
  EXPECT_EQ(h.scheduler->waiting_count(), 2);
}

TEST(Scheduler, DecodesFirstThenChunksOldestFirstUnderTheBudget) {
  // A budget of 10 tokens. A: 8 input tokens, 5 output; B: 12 input tokens; C: 4 input tokens.
  SchedulerConfig config;
  config.max_batch_tokens = 10;
  Harness h({tier("hbm", 100)}, config);
  h.driver.add(request(0, 100, 2, 5));
  h.driver.add(request(1, 200, 3, 2));
  h.driver.add(request(2, 300, 1, 2));
  h.start();

  // Step 1: no decodes; A's 8 tokens, then 2 of B's 12; nothing left for C.
  const StepPlan& first = h.scheduler->decide().step;
  EXPECT_TRUE(first.decodes.empty());
  ASSERT_EQ(first.prefills.size(), 2u);
  EXPECT_EQ(first.prefills[0].request_id, 0u);
  EXPECT_EQ(first.prefills[0].start_token, 0);
  EXPECT_EQ(first.prefills[0].tokens, 8);
  EXPECT_EQ(first.prefills[1].request_id, 1u);
  EXPECT_EQ(first.prefills[1].tokens, 2);
  EXPECT_EQ(first.tokens, 10);
  EXPECT_DOUBLE_EQ(first.seconds, 10 / kTokensPerS);
  h.backend.clock += first.seconds;
  h.scheduler->finish_step();
  EXPECT_DOUBLE_EQ(h.records[0].first_token_s, 0.010);  // A's prefill is done: its first token

  // Step 2: A decodes one token over 8 + 1 tokens of context; B takes the other 9, after its first 2.
  const StepPlan& second = h.scheduler->decide().step;
  ASSERT_EQ(second.decodes.size(), 1u);
  EXPECT_EQ(second.decodes[0].request_id, 0u);
  EXPECT_EQ(second.decodes[0].context_tokens, 9);
  ASSERT_EQ(second.prefills.size(), 1u);
  EXPECT_EQ(second.prefills[0].request_id, 1u);
  EXPECT_EQ(second.prefills[0].start_token, 2);
  EXPECT_EQ(second.prefills[0].tokens, 9);
  h.backend.clock += second.seconds;
  h.scheduler->finish_step();

  // Step 3: A decodes; B's last token; C's 4 tokens.
  const StepPlan& third = h.scheduler->decide().step;
  EXPECT_EQ(third.decodes.size(), 1u);
  EXPECT_EQ(prefill_ids(third), (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(third.prefills[0].tokens, 1);
  EXPECT_EQ(third.prefills[1].tokens, 4);
  EXPECT_EQ(third.tokens, 6);
}

// Attention priced from blocks of one key tile of one key, 1 s each, on two slots, for a card of one layer,
// one head and one parameter: a step takes as long as the longer of two lanes of keys (the linear terms,
// under a picosecond, aside).
CostModel key_counting_cost() {
  ModelCard card;
  card.name = "one-head";
  card.layers = card.query_heads = card.kv_heads = 1;
  card.head_dim = 64;
  card.total_params = card.active_params = 1;
  const AttentionKernelCost kernel{.key_tile = 1, .slots = 2, .launch_s = 0, .block_s = 0, .key_tile_s = 1};
  const StepCosts costs{.linear_mfu = 1,
                        .attention = AttentionCosts{.query_rows = 1,
                                                    .multiprocessors = 1,
                                                    .min_split_keys = 1 << 30,
                                                    .unsplit = kernel,
                                                    .split = kernel}};
  return CostModel(card, parse_hardware(load_config("h200", "configs/hardware")), kBytesPerToken, costs);
}

TEST(Scheduler, AStepsWorkCarriesEachDecodesContext) {
  // A (8 tokens) and B (4 tokens) prefill in step 1. In step 2 both decode: A after 8 + 1 tokens, so its
  // query sees 10 keys; B after 4 + 1, 6 keys. Side by side on the two slots: max(10, 6) = 10 s, where
  // their summed context spread evenly would give 8 s.
  SchedulerConfig config;
  config.max_batch_tokens = 12;
  Harness h({tier("hbm", 100)}, config);
  h.cost = key_counting_cost();
  h.driver.add(request(0, 100, 2, 5));
  h.driver.add(request(1, 200, 1, 3));
  h.start();
  h.decide_and_run();
  const StepPlan& second = h.scheduler->decide().step;
  ASSERT_EQ(second.decodes.size(), 2u);
  ASSERT_TRUE(second.prefills.empty());
  EXPECT_NEAR(second.compute_s, 10.0, 1e-9);
}

// HBM holds 8 blocks, DRAM 100. Blocks 1-4 are cached in DRAM only (a request used them, then one of 8
// other blocks pushed them out of HBM); the request under test is blocks 1-5, 20 tokens, 16 of them hits in
// DRAM. Recomputing those 16 tokens takes 16 ms at 1,000 tokens/s.
Harness dram_hit_harness(double load_latency_s, double load_bandwidth, bool layerwise = false) {
  SchedulerConfig config;
  config.layerwise_overlap = layerwise;
  config.recompute_when_faster = true;
  config.tier_load_paths = {LoadPath{}, LoadPath{Medium::kDram, "dram", load_bandwidth, load_latency_s}};
  Harness h({tier("hbm", 8), tier("dram", 100)}, config);
  Admission a;
  h.cache.admit(std::vector<uint64_t>{1, 2, 3, 4}, a);
  h.cache.release(a);
  h.cache.admit(std::vector<uint64_t>{11, 12, 13, 14, 15, 16, 17, 18}, a);
  h.cache.release(a);
  EXPECT_FALSE(h.cache.contains(0, 1));
  EXPECT_TRUE(h.cache.contains(1, 4));
  h.driver.add(request(7, 1, 5, 3));
  return h;
}

TEST(Scheduler, LoadsHitsWhenLoadingIsFaster) {
  // 16 tokens × 8 bytes = 128 bytes: 10 ms latency + 128 B at 25,600 B/s = 15 ms < 16 ms.
  Harness h = dram_hit_harness(0.010, 25600);
  h.start();
  const Decision& d = h.scheduler->decide();
  EXPECT_EQ(h.records[0].hit_tokens, (std::vector<int64_t>{0, 16}));
  ASSERT_EQ(h.backend.loads.size(), 1u);
  EXPECT_EQ(h.backend.loads[0].bytes_by_tier, (std::vector<double>{0, 128}));
  // Its load is pending, so it does not prefill: nothing can run and the engine waits for the load.
  ASSERT_EQ(d.kind, Decision::Kind::kWait);
  EXPECT_EQ(d.awaited_loads, (std::vector<LoadHandle>{0}));
  EXPECT_EQ(d.next_arrival_s, std::nullopt);

  h.backend.clock = 0.015;
  h.backend.loads[0].done = true;
  const Decision& after = h.scheduler->decide();
  EXPECT_DOUBLE_EQ(h.records[0].load_wait_s, 0.015);
  ASSERT_EQ(after.kind, Decision::Kind::kStep);
  ASSERT_EQ(after.step.prefills.size(), 1u);
  EXPECT_EQ(after.step.prefills[0].start_token, 16);  // only the last block is computed
  EXPECT_EQ(after.step.prefills[0].tokens, 4);
}

TEST(Scheduler, ALoadWhoseCopiesRanInTheCacheCallWaitedFromTheAdmission) {
  // kvtier-hw serve copies a request's hits inside the cache call: the 15 ms load has landed before the
  // load is started, and its time is the request's load wait, not a gap after it.
  Harness h = dram_hit_harness(0.010, 25600);
  h.backend.admit_seconds = 0.015;
  h.start();
  ASSERT_EQ(h.scheduler->decide().kind, Decision::Kind::kWait);
  h.scheduler->end_iteration();
  h.backend.loads[0].done = true;
  ASSERT_EQ(h.scheduler->decide().kind, Decision::Kind::kStep);
  EXPECT_DOUBLE_EQ(h.records[0].admitted_s, 0);
  EXPECT_DOUBLE_EQ(h.records[0].load_wait_s, 0.015);
}

TEST(Scheduler, RecomputesHitsWhenRecomputingIsFaster) {
  // 10 ms latency + 128 B at 18,286 B/s = 17 ms > 16 ms.
  Harness h = dram_hit_harness(0.010, 128 / 0.007);
  h.start();
  const Decision& d = h.scheduler->decide();
  EXPECT_EQ(h.records[0].hit_tokens, (std::vector<int64_t>{0, 16}));
  EXPECT_TRUE(h.backend.loads.empty());
  ASSERT_EQ(d.kind, Decision::Kind::kStep);
  ASSERT_EQ(d.step.prefills.size(), 1u);
  EXPECT_EQ(d.step.prefills[0].start_token, 0);
  EXPECT_EQ(d.step.prefills[0].tokens, 20);
}

TEST(Scheduler, LayerwiseOverlapPrefillsUnderItsLoadAndEmitsTheFirstTokenWhenItLands) {
  Harness h = dram_hit_harness(0.010, 25600, true);
  h.start();
  const Decision& d = h.scheduler->decide();
  ASSERT_EQ(d.kind, Decision::Kind::kStep);
  ASSERT_EQ(d.step.prefills.size(), 1u);
  EXPECT_EQ(d.step.prefills[0].start_token, 16);
  EXPECT_EQ(d.step.prefills[0].overlapped_load, std::optional<LoadHandle>{0});
  h.run(d);  // 4 ms: the prefill is done, the load is not
  EXPECT_EQ(h.records[0].first_token_s, -1);
  EXPECT_EQ(h.scheduler->decide().kind, Decision::Kind::kWait);

  h.backend.clock = 0.015;
  h.backend.loads[0].done = true;
  const Decision& after = h.scheduler->decide();
  EXPECT_DOUBLE_EQ(h.records[0].first_token_s, 0.015);
  ASSERT_EQ(after.kind, Decision::Kind::kStep);
  ASSERT_EQ(after.step.decodes.size(), 1u);  // the second token
  EXPECT_TRUE(after.step.prefills.empty());
}

TEST(Scheduler, EvictionsBecomeStoresAndConversionsLengthenTheNextStep) {
  // DRAM holds a 4-bytes-per-token layout; the GPU converts at 1,000 B/s. Loading the 4 hit blocks moves
  // 4 × 16 B over the link and converts 4 × (16 + 32) B: 192 ms; evicting 5 unpinned HBM blocks (11-15)
  // to make room writes 5 × 16 B to DRAM and converts 5 × (32 + 16) B: 240 ms.
  SchedulerConfig config;
  config.tier_conversions = {{}, {.load_bytes_per_s = 1000, .store_bytes_per_s = 1000}};
  Harness h({tier("hbm", 8), tier("dram", 100, 4)}, config);
  Admission a;
  h.cache.admit(std::vector<uint64_t>{1, 2, 3, 4}, a);
  h.cache.release(a);
  h.cache.admit(std::vector<uint64_t>{11, 12, 13, 14, 15, 16, 17, 18}, a);
  h.cache.release(a);
  h.driver.add(request(7, 1, 5));
  h.start();
  h.scheduler->decide();
  ASSERT_EQ(h.backend.loads.size(), 1u);
  EXPECT_EQ(h.backend.loads[0].bytes_by_tier, (std::vector<double>{0, 64}));
  EXPECT_EQ(h.backend.loads[0].request_id, 7u);
  double stored = 0;
  for (const FakeBackend::Store& s : h.backend.stores) {
    EXPECT_EQ(s.from_tier, 0);
    EXPECT_EQ(s.to_tier, 1);
    EXPECT_EQ(s.cause, 7) << "request 7's admission made the room";
    stored += s.bytes;
  }
  EXPECT_EQ(stored, 80);
  h.backend.loads[0].done = true;
  const StepPlan& step = h.scheduler->decide().step;
  EXPECT_DOUBLE_EQ(step.compute_s, 4 / kTokensPerS);
  EXPECT_DOUBLE_EQ(step.conversion_s, 0.192 + 0.240);
  EXPECT_DOUBLE_EQ(step.seconds, step.compute_s + step.conversion_s);
}

// The conversion time of the step after a request loads 4 hit blocks from a DRAM tier of `dram_layout`
// (HBM holds flat8: one group of 8 B per token), at 1,000 B/s.
double conversion_after_loading_from(const KvLayout& dram_layout) {
  SchedulerConfig config;
  config.tier_conversions = {{}, {.load_bytes_per_s = 1000, .store_bytes_per_s = 1000}};
  TierSpec dram = tier("dram", 100);
  dram.layout = dram_layout;
  Harness h({tier("hbm", 8), dram}, config);
  Admission a;
  h.cache.admit(std::vector<uint64_t>{1, 2, 3, 4}, a);
  h.cache.release(a);
  h.cache.admit(std::vector<uint64_t>{11, 12, 13, 14, 15, 16, 17, 18}, a);
  h.cache.release(a);
  h.driver.add(request(7, 1, 5));
  h.start();
  h.scheduler->decide();
  h.backend.loads.at(0).done = true;
  return h.scheduler->decide().step.conversion_s;
}

TEST(Scheduler, LayoutsConvertWhenTheirGroupsDifferWhateverTheirNames) {
  const KvLayout hbm = tier("hbm", 1).layout;
  KvLayout renamed = hbm;
  renamed.name = "dram.kv";
  EXPECT_EQ(conversion_after_loading_from(renamed), 0);
  // Same name, 4 B per token: loading 4 blocks converts 4 × (16 + 32) B, evicting 5 HBM blocks to make
  // room converts 5 × (32 + 16) B, as in the test above.
  KvLayout regrouped = tier("dram", 1, 4).layout;
  regrouped.name = hbm.name;
  EXPECT_DOUBLE_EQ(conversion_after_loading_from(regrouped), 0.192 + 0.240);
}

TEST(Scheduler, DecodeKvGrowthPreemptsTheNewestRequest) {
  // 4 blocks of HBM (128 B) for KV. A and B hold 2 blocks each and decode; after their first decode step
  // their KV has grown by 2 × 8 B, leaving 112 B: 3 blocks, fewer than the 4 pinned. B, the newer, is
  // preempted: its 8 B of decode KV go, and A's 2 blocks fit in 120 B.
  Harness h({tier("hbm", 4)});
  h.driver.add(request(0, 100, 2, 10));
  h.driver.add(request(1, 200, 2, 10));
  h.start();
  h.decide_and_run();  // both prefill and emit their first token
  EXPECT_EQ(h.scheduler->running_count(), 2);
  h.decide_and_run();  // both decode
  EXPECT_EQ(h.scheduler->running_count(), 1);
  EXPECT_EQ(h.scheduler->waiting_count(), 1);
  EXPECT_EQ(h.records[0].preemptions, 0);
  EXPECT_EQ(h.records[1].preemptions, 1);
  EXPECT_EQ(h.records[1].first_token_s, -1);
  EXPECT_DOUBLE_EQ(h.state.decode_kv_bytes, 8);
  EXPECT_EQ(h.cache.capacity_blocks(0), 3);
  // B queues again at the front and cannot come back while A's decode KV leaves only 3 blocks.
  const Decision& d = h.scheduler->decide();
  ASSERT_EQ(d.kind, Decision::Kind::kStep);
  EXPECT_EQ(d.step.decodes.size(), 1u);
  EXPECT_EQ(d.step.decodes[0].request_id, 0u);
  EXPECT_TRUE(d.step.prefills.empty());
}

// A demotion forced by decode KV shrinking HBM's cache area is for no request. HBM holds 4 blocks (128 B):
// A pins 2 beside cached block 1; its decode KV grows 8 B a step, so after its fifth decode 88 B are left,
// 2 blocks, and block 1 goes to DRAM.
TEST(Scheduler, ADemotionOfTheCacheAreaShrinkingIsForNoRequest) {
  Harness h({tier("hbm", 4), tier("dram", 100)});
  Admission a;
  h.cache.admit(std::vector<uint64_t>{1}, a);
  h.cache.release(a);
  h.driver.add(request(0, 100, 2, 10));
  h.start();
  h.decide_and_run();  // prefill and the first token
  for (int decode = 1; decode <= 4; ++decode) h.decide_and_run();
  EXPECT_TRUE(h.backend.stores.empty());
  h.decide_and_run();
  ASSERT_EQ(h.backend.stores.size(), 1u);
  EXPECT_EQ(h.backend.stores[0].from_tier, 0);
  EXPECT_EQ(h.backend.stores[0].to_tier, 1);
  EXPECT_EQ(h.backend.stores[0].cause, kNoRequest);
}

TEST(Scheduler, ARequestThatOutgrowsHbmRunningAloneIsRejectedNotRequeued) {
  // HBM holds 4 blocks (128 B). A pins 3 (96 B) and asks for 100 tokens; its decode KV grows 8 B a step,
  // so after its 5th decode step (40 B) the cache area is 88 B: 2 blocks, fewer than its 3. It runs alone,
  // so a second try would end the same way: it is rejected instead of queued again (which looped forever).
  Harness h({tier("hbm", 4)});
  h.driver.add(request(0, 100, 3, 100));
  h.start();
  for (int i = 0; i < 20 && !h.scheduler->finished(); ++i) {
    const Decision& d = h.scheduler->decide();
    if (d.kind == Decision::Kind::kStep) h.run(d);
  }
  EXPECT_TRUE(h.scheduler->finished());
  EXPECT_TRUE(h.records[0].rejected);
  EXPECT_EQ(h.records[0].preemptions, 1);
  EXPECT_EQ(h.driver.completed, (std::vector<uint64_t>{0}));
  EXPECT_DOUBLE_EQ(h.state.decode_kv_bytes, 0);
}

TEST(Scheduler, PreemptingALoadingRequestCancelsItsLoad) {
  // A (2 blocks) decodes; B (blocks 1-2, cached in DRAM only) waits for its load. A's first decode step
  // leaves 4 × 32 − 8 = 120 B: 3 blocks, fewer than the 4 pinned, so B is preempted mid-load.
  Harness h({tier("hbm", 4), tier("dram", 100)});
  cache_blocks_1_2_in_dram_only(h);
  h.driver.add(request(0, 100, 2, 10));
  h.driver.add(request(1, 1, 2, 10));
  h.start();
  h.decide_and_run();  // A prefills; B waits for its load
  ASSERT_EQ(h.backend.loads.size(), 1u);
  EXPECT_FALSE(h.backend.loads[0].cancelled);
  h.decide_and_run();  // A decodes
  EXPECT_TRUE(h.backend.loads[0].cancelled);
  EXPECT_EQ(h.records[1].preemptions, 1);
}

TEST(Scheduler, ARequestPrefilledElsewhereWaitsForItsKvThenDecodesWithoutPrefilling) {
  // Blocks 1-2 are cached in DRAM only; a request of them (8 tokens, 3 output tokens) prefilled on
  // another instance loads nothing from DRAM, counts no hit and prefills nothing: it waits for its KV,
  // gets its first token when the KV lands (0.25 s), then decodes its 2 other tokens over 9 and 10.
  Harness h({tier("hbm", 4), tier("dram", 100)});
  cache_blocks_1_2_in_dram_only(h);
  Request r = request(0, 1, 2, 3);
  r.prefilled_elsewhere = true;
  h.driver.add(r);
  h.start();
  const Decision& wait = h.scheduler->decide();
  ASSERT_EQ(wait.kind, Decision::Kind::kWait);
  EXPECT_EQ(wait.awaited_loads, (std::vector<LoadHandle>{0}));
  EXPECT_EQ(h.backend.received, (std::vector<uint64_t>{0}));
  ASSERT_EQ(h.backend.loads.size(), 1u);
  EXPECT_TRUE(h.backend.loads[0].bytes_by_tier.empty());  // nothing from the tiers
  EXPECT_EQ(h.records[0].hit_tokens, (std::vector<int64_t>{0, 0}));
  h.scheduler->end_iteration();
  h.backend.clock = 0.25;
  h.backend.loads[0].done = true;
  const Decision& first = h.scheduler->decide();
  EXPECT_DOUBLE_EQ(h.records[0].first_token_s, 0.25);
  EXPECT_DOUBLE_EQ(h.records[0].load_wait_s, 0.25);
  ASSERT_EQ(first.kind, Decision::Kind::kStep);
  EXPECT_TRUE(first.step.prefills.empty());
  ASSERT_EQ(first.step.decodes.size(), 1u);
  EXPECT_EQ(first.step.decodes[0].context_tokens, 9);
  h.run(first);
  h.decide_and_run();
  EXPECT_EQ(h.driver.completed, (std::vector<uint64_t>{0}));
  EXPECT_EQ(h.records[0].recomputed_tokens, 0);
}

TEST(Scheduler, APrefilledRequestPreemptedIsRecomputedHere) {
  // As in DecodeKvGrowthPreemptsTheNewestRequest, but B (blocks 200-201) was prefilled elsewhere: its KV
  // lands, both decode, and B is preempted. It is not received again: it comes back once A completes and
  // prefills all its 8 tokens here (A's growing decode KV left the cache no room for B's blocks, and there
  // is no lower tier to keep them).
  Harness h({tier("hbm", 4)});
  h.driver.add(request(0, 100, 2, 10));
  Request b = request(1, 200, 2, 10);
  b.prefilled_elsewhere = true;
  h.driver.add(b);
  h.start();
  h.decide_and_run();  // A prefills; B waits for its KV
  h.backend.loads.at(0).done = true;
  h.decide_and_run();  // B's KV has landed: both decode
  EXPECT_EQ(h.records[1].preemptions, 1);
  int b_chunks = 0;
  for (int i = 0; i < 100 && !h.scheduler->finished(); ++i) {
    const Decision& d = h.scheduler->decide();
    if (d.kind != Decision::Kind::kStep) continue;
    for (const PrefillChunk& c : d.step.prefills) b_chunks += c.request_id == 1 ? 1 : 0;
    h.run(d);
  }
  EXPECT_TRUE(h.scheduler->finished());
  EXPECT_EQ(h.backend.received, (std::vector<uint64_t>{1}));
  EXPECT_EQ(b_chunks, 1);
  EXPECT_EQ(h.records[1].recomputed_tokens, 8);
  EXPECT_EQ(h.driver.completed, (std::vector<uint64_t>{0, 1}));
}

TEST(Scheduler, RejectsARequestThatCanNeverFitOnceNothingRuns) {
  // HBM holds 4 blocks. A (blocks 1-2, cached in DRAM only) waits for its load; B (5 blocks) waits while A
  // is admitted, even though nothing can step, and is rejected once A has finished; C is then served.
  Harness h({tier("hbm", 4), tier("dram", 100)});
  cache_blocks_1_2_in_dram_only(h);
  h.driver.add(request(0, 1, 2));
  h.driver.add(request(1, 200, 5));
  h.driver.add(request(2, 300, 1, 1, 1.0));
  h.start();
  EXPECT_EQ(h.scheduler->decide().kind, Decision::Kind::kWait);
  EXPECT_FALSE(h.records[1].rejected);
  h.backend.loads.at(0).done = true;
  h.decide_and_run();  // A's one output token: it completes
  EXPECT_EQ(h.driver.completed, (std::vector<uint64_t>{0}));
  EXPECT_FALSE(h.records[1].rejected);
  EXPECT_EQ(h.scheduler->decide().kind, Decision::Kind::kRejected);
  EXPECT_TRUE(h.records[1].rejected);
  EXPECT_EQ(h.driver.completed, (std::vector<uint64_t>{0, 1}));
  const Decision& idle = h.scheduler->decide();
  ASSERT_EQ(idle.kind, Decision::Kind::kWait);
  EXPECT_EQ(idle.next_arrival_s, std::optional<double>{1.0});
  h.backend.clock = 1.0;
  h.decide_and_run();
  EXPECT_TRUE(h.scheduler->finished());
  EXPECT_FALSE(h.records[2].rejected);
}

TEST(Scheduler, ARequestWithNoInputIsRejectedOnArrivalAndNoEmptyStepIsPlanned) {
  Harness h({tier("hbm", 4)});
  Request empty = request(0, 100, 0, 5);
  ASSERT_EQ(empty.input_tokens, 0);
  h.driver.add(empty);
  h.start();
  const Decision& d = h.scheduler->decide();
  EXPECT_NE(d.kind, Decision::Kind::kStep);
  EXPECT_TRUE(h.records[0].rejected);
  EXPECT_EQ(h.driver.completed, (std::vector<uint64_t>{0}));
  EXPECT_TRUE(h.scheduler->finished());
}

TEST(Scheduler, EndIterationPublishesQueueAndBatch) {
  SchedulerConfig config;
  config.max_running = 1;
  Harness h({tier("hbm", 100)}, config);
  h.driver.add(request(0, 100, 1));
  h.driver.add(request(1, 200, 1));
  h.start();
  h.scheduler->decide();
  EXPECT_EQ(h.state.running, 0);  // not yet: a sampler sees the previous iteration's figures
  h.scheduler->end_iteration();
  EXPECT_EQ(h.state.running, 1);
  EXPECT_EQ(h.state.queued, 1);
  EXPECT_EQ(h.state.input_since_sample, 4);
}

TEST(Scheduler, ARequestArrivingDuringAStepWaitsForItAndItsTtftCountsTheWait) {
  // A (8 tokens) prefills from 0 to 8 ms; B arrives at 3 ms, is taken in when the step ends and prefills
  // its 4 tokens from 8 to 12 ms: a TTFT of 9 ms, 5 of them waiting for A's step.
  Harness h({tier("hbm", 100)});
  h.driver.add(request(0, 100, 2));
  h.driver.add(request(1, 200, 1, 1, 0.003));
  h.start();
  h.decide_and_run();
  ASSERT_DOUBLE_EQ(h.backend.clock, 0.008);
  h.decide_and_run();
  EXPECT_DOUBLE_EQ(h.records[1].arrival_s, 0.003);
  EXPECT_DOUBLE_EQ(h.records[1].admitted_s, 0.008);
  EXPECT_DOUBLE_EQ(h.records[1].ttft(), 0.009);
}

// A backend that repeats the scheduler's cache calls on a cache of its own, as kvtier-hw serve repeats
// them on its store of real KV.
class MirrorBackend : public FakeBackend {
 public:
  explicit MirrorBackend(std::vector<TierSpec> tiers) : mirror(std::move(tiers)) {}
  void cache_admitted(uint64_t request_id, std::span<const uint64_t> block_ids,
                      const std::vector<bool>&) override {
    ASSERT_TRUE(mirror.admit(block_ids, admissions[request_id]));
  }
  void cache_released(uint64_t request_id) override {
    mirror.release(admissions.at(request_id));
    admissions.erase(request_id);
  }
  void cache_capacity_set(int tier, int64_t bytes) override { ASSERT_TRUE(mirror.set_capacity(tier, bytes)); }

  TieredCache mirror;
  std::map<uint64_t, Admission> admissions;
};

TEST(Scheduler, ABackendRepeatingItsCacheCallsHoldsEveryBlockWhereTheCacheDoes) {
  // Shared prefixes, a DRAM tier below a 7-block HBM and decode growth that preempts: admissions, hits,
  // evictions, releases and capacity changes all happen. Run to the end, every load landing within one iteration.
  const std::vector<TierSpec> tiers = {tier("hbm", 7), tier("dram", 8)};
  TieredCache cache(tiers);
  ListDriver driver;
  MirrorBackend backend(tiers);
  RequestLog records;
  SchedulerState state;
  const CostModel cost = CostModel::fixed_prefill_rate(ModelCard{}, kTokensPerS, kBytesPerToken);
  SchedulerConfig config;
  config.kv_space_bytes = 7 * kBlockBytes;
  config.tier_conversions.assign(2, {1e12, 1e12});
  config.tier_load_paths.assign(2, {});
  for (uint64_t i = 0; i < 12; ++i) {
    Request r = request(i, 100 * (i % 3), 2 + static_cast<int64_t>(i % 2), 3 + static_cast<int64_t>(i % 4),
                        0.001 * static_cast<double>(i));
    driver.add(std::move(r));
  }
  Scheduler scheduler(config, cost, cache, driver, backend, records, state);
  int64_t preemptions = 0;
  for (int iteration = 0; !scheduler.finished() && iteration < 10000; ++iteration) {
    const Decision& d = scheduler.decide();
    for (auto& load : backend.loads) load.done = true;  // a load lands within a step
    if (d.kind == Decision::Kind::kStep) {
      backend.clock += d.step.seconds;
      scheduler.finish_step();
    } else if (d.kind == Decision::Kind::kWait) {
      if (d.awaited_loads.empty() && d.next_arrival_s) backend.clock = *d.next_arrival_s;
    }
    scheduler.end_iteration();
  }
  ASSERT_TRUE(scheduler.finished()) << scheduler.waiting_count() << " waiting, " << scheduler.running_count()
                                    << " running, " << driver.completed.size() << " completed, clock " << backend.clock;
  for (const RequestRecord& r : records) preemptions += r.preemptions;
  EXPECT_GT(preemptions, 0);
  EXPECT_GT(cache.traffic().flow(CacheEventKind::kDemote, 0, 1).blocks, 0);
  EXPECT_GT(cache.traffic().flow(CacheEventKind::kPromote, 1, 0).blocks, 0);
  for (int t = 0; t < 2; ++t) {
    EXPECT_EQ(backend.mirror.used_blocks(t), cache.used_blocks(t));
    EXPECT_EQ(backend.mirror.capacity_blocks(t), cache.capacity_blocks(t));
  }
  for (int kind = 0; kind < kCacheEventKinds; ++kind) {
    for (int from = -1; from < 2; ++from) {
      for (int to = -1; to < 2; ++to) {
        const auto k = static_cast<CacheEventKind>(kind);
        EXPECT_EQ(backend.mirror.traffic().flow(k, from, to).blocks, cache.traffic().flow(k, from, to).blocks)
            << event_kind_name(k) << " " << from << "->" << to;
      }
    }
  }
}

// What one run of a workload did, step by step, for comparing two schedulers.
struct RunTrace {
  std::vector<std::vector<double>> steps;  // tokens, compute time, decode KV after, HBM cache capacity after
  std::vector<std::vector<double>> records;
  std::vector<uint64_t> completed;
  std::vector<std::vector<double>> stores;
  std::map<std::pair<int, int>, double> store_bytes;  // by path
  std::vector<std::vector<double>> loads;              // each load's bytes by tier
  int64_t decode_run_steps = 0;
};

// 24 requests on six chains of 1 to 4 blocks, half at once and half during the first steps, outputs of 2
// to 40 tokens, under a 16-block HBM that decode growth overflows (preemptions), every load landing three
// iterations after it starts; the step's time follows the decodes'
// context (a roofline on the KV read, the card's weights negligible).
RunTrace run_to_the_end(bool list_decodes, double bytes_per_token, bool first_tokens_on_landing = false,
                        bool store_each_block = true) {
  const std::vector<TierSpec> tiers = {tier("hbm", 16), tier("dram", 8)};
  TieredCache cache(tiers);
  ListDriver driver;
  FakeBackend backend;
  RequestLog records;
  SchedulerState state;
  ModelCard card;
  card.layers = card.query_heads = card.kv_heads = 1;
  card.head_dim = 64;
  card.total_params = card.active_params = 1;
  const CostModel cost(card, parse_hardware(load_config("h200", "configs/hardware")), bytes_per_token);
  SchedulerConfig config;
  config.kv_space_bytes = 16 * kBlockBytes;
  config.tier_conversions.assign(2, {1e12, 1e12});
  config.tier_load_paths.assign(2, {});
  config.list_decodes = list_decodes;
  config.layerwise_overlap = first_tokens_on_landing;
  config.store_each_block = store_each_block;
  for (uint64_t i = 0; i < 24; ++i) {
    Request r = request(i, 100 * (i % 6), 1 + static_cast<int64_t>(i % 4), 2 + static_cast<int64_t>(i * 7 % 39),
                        i < 12 ? 0 : 1e-9 * static_cast<double>(i));
    r.prefilled_elsewhere = first_tokens_on_landing && i % 4 == 3;
    driver.add(std::move(r));
  }
  Scheduler scheduler(config, cost, cache, driver, backend, records, state);
  RunTrace trace;
  std::vector<int> load_started;  // the iteration of each load's start: it lands three iterations later
  for (int iteration = 0; !scheduler.finished() && iteration < 10000; ++iteration) {
    const Decision& d = scheduler.decide();
    load_started.resize(backend.loads.size(), iteration);
    for (size_t l = 0; l < backend.loads.size(); ++l)
      backend.loads[l].done = iteration >= load_started[l] + 3;
    if (d.kind == Decision::Kind::kStep) {
      backend.clock += d.step.seconds;
      const std::vector<double> planned = {static_cast<double>(d.step.tokens), d.step.compute_s};
      scheduler.finish_step();
      trace.steps.push_back(planned);
      trace.steps.back().push_back(state.decode_kv_bytes);
      trace.steps.back().push_back(static_cast<double>(cache.tier(0).capacity_bytes));
    } else if (d.kind == Decision::Kind::kWait && d.awaited_loads.empty() && d.next_arrival_s) {
      backend.clock = *d.next_arrival_s;
    } else if (d.kind == Decision::Kind::kWait) {
      backend.clock += 1e-6;  // waiting for a load
    }
    scheduler.end_iteration();
  }
  EXPECT_TRUE(scheduler.finished());
  for (const RequestRecord& r : records) {
    trace.records.push_back({r.first_token_s, r.completion_s, static_cast<double>(r.preemptions),
                             static_cast<double>(r.recomputed_tokens), r.prefill_s});
  }
  trace.completed = driver.completed;
  for (const FakeBackend::Store& s : backend.stores) {
    trace.stores.push_back({static_cast<double>(s.from_tier), static_cast<double>(s.to_tier), s.bytes,
                            static_cast<double>(s.cause)});
    trace.store_bytes[{s.from_tier, s.to_tier}] += s.bytes;
  }
  for (const FakeBackend::Load& l : backend.loads) trace.loads.push_back(l.bytes_by_tier);
  trace.decode_run_steps = state.decode_run_steps;
  return trace;
}

// With first_tokens_on_landing, some first tokens come as a load lands, between steps: under layer-wise
// overlap, and for requests prefilled elsewhere.
void expect_decode_runs_make_the_walks_decisions(bool first_tokens_on_landing) {
  const RunTrace walked = run_to_the_end(true, kBytesPerToken, first_tokens_on_landing);
  const RunTrace ran = run_to_the_end(false, kBytesPerToken, first_tokens_on_landing);
  EXPECT_EQ(walked.decode_run_steps, 0);
  EXPECT_GT(ran.decode_run_steps, static_cast<int64_t>(ran.steps.size()) / 2) << "most steps are decode runs";
  EXPECT_EQ(ran.steps, walked.steps);
  EXPECT_EQ(ran.records, walked.records);
  EXPECT_EQ(ran.completed, walked.completed);
  EXPECT_EQ(ran.stores, walked.stores);
  int64_t preemptions = 0;
  for (const auto& r : ran.records) preemptions += static_cast<int64_t>(r[2]);
  EXPECT_GT(preemptions, 0);
  // Steps whose time differs from the one before: the decodes' context moves it.
  EXPECT_NE(ran.steps[ran.steps.size() / 2][1], ran.steps[ran.steps.size() / 2 + 1][1]);
}

TEST(Scheduler, DecodeRunsMakeEveryDecisionTheWalkMakes) {
  expect_decode_runs_make_the_walks_decisions(false);
}

TEST(Scheduler, DecodeRunsMakeTheWalksDecisionsWhenFirstTokensComeWithLoads) {
  expect_decode_runs_make_the_walks_decisions(true);
}

// A backend that queues stores by their bytes alone gets a cache call's stores summed per path: the
// same bytes on every path, the same loads and the same run, in fewer calls.
TEST(Scheduler, StoresByFlowMoveWhatEachBlocksStoreMoves) {
  const RunTrace each = run_to_the_end(true, kBytesPerToken, true, true);
  const RunTrace flows = run_to_the_end(true, kBytesPerToken, true, false);
  EXPECT_EQ(flows.steps, each.steps);
  EXPECT_EQ(flows.records, each.records);
  EXPECT_EQ(flows.loads, each.loads);
  EXPECT_EQ(flows.store_bytes, each.store_bytes);
  ASSERT_FALSE(each.store_bytes.empty());
  EXPECT_LT(flows.stores.size(), each.stores.size()) << "several blocks' stores in one call";
  bool loads_from_dram = false;
  for (const auto& load : each.loads) loads_from_dram = loads_from_dram || (load.size() > 1 && load[1] > 0);
  EXPECT_TRUE(loads_from_dram);
}

// Whole bytes per token only: with 8.5, the decode KV's sum in one addition could differ from the walk's.
TEST(Scheduler, NoDecodeRunWithFractionalBytesPerToken) {
  EXPECT_EQ(run_to_the_end(false, 8.5).decode_run_steps, 0);
}

}  // namespace
}  // namespace kvtier
