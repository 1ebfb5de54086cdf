// The tiered cache on hand-worked sequences: prefix hits, pinning, promotion, demotion with quantization,
// placement and write modes, admission filters, capacity changes, prefix-aware eviction.
#include "sim/cache/tiered_cache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>

#include "sim/cache/cache_test_support.h"

namespace kvtier {
namespace {

using testing::make_tier;

class RecordingSink : public CacheEventSink {
 public:
  void on_event(const CacheEvent& event) override { events.push_back(event); }
  std::vector<CacheEvent> events;
};

// Admits and releases at once, as the hit-rate mode does; returns the admission's prefix hit.
PrefixHit run(TieredCache& cache, std::vector<uint64_t> blocks) {
  Admission admission;
  EXPECT_TRUE(cache.admit(blocks, admission));
  PrefixHit hit = admission.prefix;
  cache.release(admission);
  return hit;
}

TEST(TieredCache, PrefixHitIsTheLeadingRunOfCachedBlocks) {
  TieredCache cache({make_tier("hbm", 8)});
  run(cache, {1, 2, 3});
  PrefixHit hit = cache.lookup(std::vector<uint64_t>{1, 2, 9, 3});
  EXPECT_EQ(hit.hit_blocks, 2);
  EXPECT_EQ(hit.hit_blocks_by_tier[0], 2);
  EXPECT_EQ(hit.tier_of_block, (std::vector<int>{0, 0}));
  EXPECT_EQ(cache.lookup(std::vector<uint64_t>{9, 1}).hit_blocks, 0);
}

// A queue head's chain, interned once, is refused, then admitted once room is made: with the hits, events
// and pins that admit() gives a fresh cache in the same state.
TEST(TieredCache, ChainInternedOnceAdmitsAsAdmitDoes) {
  auto fresh_pair = [] {
    auto cache =
        std::make_unique<TieredCache>(std::vector<TierSpec>{make_tier("hbm", 4), make_tier("dram", 4)});
    Admission first;
    EXPECT_TRUE(cache->admit(std::vector<uint64_t>{1, 2, 3}, first));
    return std::pair{std::move(cache), std::move(first)};
  };
  const std::vector<uint64_t> head = {1, 2, 7, 8};
  auto [by_chain, running] = fresh_pair();
  RecordingSink chain_events;
  by_chain->set_event_sink(&chain_events);
  std::vector<uint32_t> chain;
  by_chain->intern(head, chain);
  EXPECT_EQ(chain.size(), 4u);
  Admission waiting;
  EXPECT_FALSE(by_chain->admit_chain(chain, waiting));  // 3 pinned + 2 new > 4
  by_chain->release(running);
  ASSERT_TRUE(by_chain->admit_chain(chain, waiting));

  auto [by_ids, other] = fresh_pair();
  RecordingSink id_events;
  by_ids->set_event_sink(&id_events);
  by_ids->release(other);
  Admission reference;
  ASSERT_TRUE(by_ids->admit(head, reference));
  EXPECT_EQ(waiting.prefix.hit_blocks, 2);
  EXPECT_EQ(waiting.prefix.hit_blocks, reference.prefix.hit_blocks);
  EXPECT_EQ(waiting.slots, reference.slots);
  ASSERT_EQ(chain_events.events.size(), id_events.events.size());
  for (size_t i = 0; i < id_events.events.size(); ++i) {
    EXPECT_EQ(chain_events.events[i].kind, id_events.events[i].kind) << i;
    EXPECT_EQ(chain_events.events[i].block, id_events.events[i].block) << i;
  }
  EXPECT_EQ(by_chain->pinned_blocks(0), 4);
  EXPECT_EQ(by_chain->used_blocks(1), by_ids->used_blocks(1));
}

TEST(TieredCache, AdmissionThatDoesNotFitChangesNothing) {
  TieredCache cache({make_tier("hbm", 4), make_tier("dram", 4)});
  RecordingSink sink;
  cache.set_event_sink(&sink);
  Admission running;
  ASSERT_TRUE(cache.admit(std::vector<uint64_t>{1, 2, 3}, running));
  size_t events = sink.events.size();
  Admission second;
  EXPECT_FALSE(cache.admit(std::vector<uint64_t>{4, 5}, second));  // 3 pinned + 2 new > 4
  EXPECT_FALSE(second.admitted);
  EXPECT_EQ(second.new_pins, 2);
  EXPECT_EQ(sink.events.size(), events);
  EXPECT_EQ(cache.used_blocks(0), 3);
  EXPECT_EQ(cache.pinned_blocks(0), 3);
  EXPECT_FALSE(cache.contains(0, 4));
  EXPECT_TRUE(cache.admit(std::vector<uint64_t>{1, 2, 3, 4}, second));  // shares the pinned blocks
  EXPECT_EQ(second.new_pins, 1);
  EXPECT_EQ(second.prefix.hit_blocks, 3);
  EXPECT_EQ(cache.pinned_blocks(0), 4);
}

// Random operations on a 12-block HBM over a 16-block DRAM, for the refusal properties below.
class RandomOps {
 public:
  enum class Op { kRelease, kResize, kAdmit, kRefuse };

  explicit RandomOps(uint64_t seed) : random_(seed) {}

  // A release of a running admission, a resize of HBM (never below its pinned blocks) or an admission of
  // a chain of 1 to 6 blocks (ids 1-4 shared by many chains, the rest mostly their own), which `chain`
  // then holds, with the blocks it pinned or would have pinned anew in `new_pins`.
  Op apply(std::vector<uint64_t>& chain, int64_t& new_pins) {
    const int64_t kind = pick(4);
    if (kind == 0 && !running_.empty()) {
      const auto i = static_cast<std::ptrdiff_t>(pick(static_cast<int64_t>(running_.size())));
      cache.release(running_[static_cast<size_t>(i)]);
      running_.erase(running_.begin() + i);
      return Op::kRelease;
    }
    if (kind == 1) {
      const int64_t blocks = std::max(cache.pinned_blocks(0), 4 + pick(10));
      EXPECT_TRUE(cache.set_capacity(0, blocks * cache.tier(0).bytes_per_block()));
      return Op::kResize;
    }
    chain.clear();
    for (int64_t b = 0, n = 1 + pick(6); b < n; ++b) chain.push_back(b < 2 ? 1 + pick(4) : 10 + pick(40));
    Admission admission;
    const bool admitted = cache.admit(chain, admission);
    new_pins = admission.new_pins;
    if (!admitted) return Op::kRefuse;
    running_.push_back(std::move(admission));
    return Op::kAdmit;
  }

  TieredCache cache{{make_tier("hbm", 12), make_tier("dram", 16)}};

 private:
  int64_t pick(int64_t n) { return static_cast<int64_t>(random_() % static_cast<uint64_t>(n)); }

  std::mt19937_64 random_;
  std::vector<Admission> running_;
};

// The scheduler retries a refused queue head only when it may fit. So, whatever happens in between (other
// admissions, a shrinking HBM, evictions), a refused chain must stay refused
//  - while room_generation() has not moved (and a release or a growing tier 0 must move it);
//  - while nothing was admitted since and the blocks its refusal would have pinned anew do not fit beside
//    the pinned blocks (releases and resizes alone can only add to those).
TEST(TieredCache, ARefusedAdmissionStaysRefusedWhileNothingMadeRoomForIt) {
  int64_t bounded_by_generation = 0, bounded_by_pins = 0;
  for (uint64_t trial = 0; trial < 50; ++trial) {
    RandomOps ops(7 + trial);
    TieredCache& cache = ops.cache;
    std::vector<uint64_t> chain, by_generation, by_pins;
    uint64_t refused_at = 0;
    int64_t new_pins = 0, refused_pins = 0;
    for (int op = 0; op < 200; ++op) {
      const uint64_t before = cache.room_generation();
      const int64_t capacity = cache.capacity_blocks(0);
      const RandomOps::Op done = ops.apply(chain, new_pins);
      if (done == RandomOps::Op::kRelease) {
        EXPECT_NE(cache.room_generation(), before);
      } else if (done == RandomOps::Op::kResize) {
        EXPECT_EQ(cache.room_generation() != before, cache.capacity_blocks(0) > capacity);
      } else {
        EXPECT_EQ(cache.room_generation(), before);
      }
      if (done == RandomOps::Op::kAdmit) by_pins.clear();
      if (done == RandomOps::Op::kRefuse && by_generation.empty()) {
        by_generation = chain;
        refused_at = cache.room_generation();
      }
      if (done == RandomOps::Op::kRefuse && by_pins.empty()) {
        by_pins = chain;
        refused_pins = new_pins;
      }
      if (cache.room_generation() != refused_at) by_generation.clear();
      Admission retry;
      if (!by_generation.empty()) {
        ++bounded_by_generation;
        ASSERT_FALSE(cache.admit(by_generation, retry)) << "trial " << trial << ", operation " << op;
      }
      if (by_pins.empty() || cache.pinned_blocks(0) + refused_pins <= cache.capacity_blocks(0)) continue;
      ++bounded_by_pins;
      ASSERT_FALSE(cache.admit(by_pins, retry)) << "trial " << trial << ", operation " << op;
      EXPECT_GE(retry.new_pins, refused_pins);
    }
  }
  EXPECT_GT(bounded_by_generation, 100);  // both properties were put to the test, many times
  EXPECT_GT(bounded_by_pins, 100);
}

TEST(TieredCache, PinnedBlocksAreNeverEvicted) {
  TieredCache cache({make_tier("hbm", 3)});
  Admission running;
  ASSERT_TRUE(cache.admit(std::vector<uint64_t>{1, 2}, running));
  run(cache, {7});
  run(cache, {8});  // evicts 7, the only unpinned block
  EXPECT_TRUE(cache.contains(0, 1));
  EXPECT_TRUE(cache.contains(0, 2));
  EXPECT_FALSE(cache.contains(0, 7));
  cache.release(running);
  EXPECT_EQ(cache.pinned_blocks(0), 0);
  EXPECT_EQ(cache.used_blocks(0), 3);  // released blocks stay cached
}

// HBM holds 2 bf16-sized blocks (8 B/token, 32 B/block), DRAM 4 blocks at 2 B/token (8 B/block): every
// demotion reads 32 bytes and writes 8, every promotion the reverse.
TEST(TieredCache, ExclusiveSpillQuantizesOnOffloadAndMovesBackOnHit) {
  TierSpec dram = make_tier("dram", 4, PolicyKind::kLru, 2);
  dram.placement = Placement::kExclusive;
  TieredCache cache({make_tier("hbm", 2), dram});
  RecordingSink sink;
  cache.set_event_sink(&sink);
  run(cache, {1, 2});
  run(cache, {3, 4});
  EXPECT_TRUE(cache.contains(1, 1));
  EXPECT_TRUE(cache.contains(1, 2));
  const auto& demoted = cache.traffic().flow(CacheEventKind::kDemote, 0, 1);
  EXPECT_EQ(demoted.blocks, 2);
  EXPECT_EQ(demoted.from_bytes, 64);
  EXPECT_EQ(demoted.to_bytes, 16);
  // Events: place 1, place 2, then room for 3 and 4. Chain 1,2 was released last block first, so 2 is
  // older than 1 and goes first.
  ASSERT_EQ(sink.events.size(), 6u);
  EXPECT_EQ(sink.events[2].kind, CacheEventKind::kDemote);
  EXPECT_EQ(sink.events[2].block, 2u);
  EXPECT_EQ(sink.events[3].block, 1u);
  EXPECT_EQ(sink.events[4].kind, CacheEventKind::kPlace);

  PrefixHit hit = run(cache, {1, 2});
  EXPECT_EQ(hit.hit_blocks, 2);
  EXPECT_EQ(hit.hit_blocks_by_tier[1], 2);
  const auto& promoted = cache.traffic().flow(CacheEventKind::kPromote, 1, 0);
  EXPECT_EQ(promoted.blocks, 2);
  EXPECT_EQ(promoted.from_bytes, 16);
  EXPECT_EQ(promoted.to_bytes, 64);
  EXPECT_FALSE(cache.contains(1, 1));  // moved, not copied
  EXPECT_TRUE(cache.contains(1, 3));
  EXPECT_TRUE(cache.contains(1, 4));
  EXPECT_EQ(cache.used_blocks(1), 2);
}

TEST(TieredCache, InclusiveTierKeepsPromotedCopyAndEvictionAboveJustDrops) {
  TieredCache cache({make_tier("hbm", 2), make_tier("dram", 4)});
  run(cache, {1, 2});
  run(cache, {3, 4});  // 1, 2 demoted
  run(cache, {1, 2});  // promoted, copies stay in DRAM; 3, 4 demoted
  EXPECT_TRUE(cache.contains(1, 1));
  EXPECT_TRUE(cache.contains(0, 1));
  int64_t demotions = cache.traffic().flow(CacheEventKind::kDemote, 0, 1).blocks;
  run(cache, {5, 6});  // evicts 1, 2 from HBM: DRAM has them, so no write
  EXPECT_EQ(cache.traffic().flow(CacheEventKind::kDemote, 0, 1).blocks, demotions);
  EXPECT_EQ(cache.traffic().flow(CacheEventKind::kDrop, 0, -1).blocks, 2);
}

TEST(TieredCache, WriteThroughCopiesAtStoreTime) {
  TierSpec dram = make_tier("dram", 8);
  dram.write = WriteMode::kThrough;
  TieredCache cache({make_tier("hbm", 2), dram});
  run(cache, {1, 2});
  EXPECT_TRUE(cache.contains(1, 1));
  EXPECT_TRUE(cache.contains(1, 2));
  EXPECT_EQ(cache.traffic().flow(CacheEventKind::kWriteThrough, 0, 1).blocks, 2);
  run(cache, {3, 4});
  EXPECT_EQ(cache.traffic().flow(CacheEventKind::kDemote, 0, 1).blocks, 0);
  EXPECT_EQ(cache.lookup(std::vector<uint64_t>{1, 2}).hit_blocks_by_tier[1], 2);
}

TEST(TieredCache, AdmissionFilterKeepsBlocksSeenOnceOutOfTheLowerTier) {
  TierSpec nvme = make_tier("nvme", 8);
  nvme.admit_after = 2;
  TieredCache cache({make_tier("hbm", 2), nvme});
  run(cache, {1});
  run(cache, {1});  // 1 referenced by two requests
  run(cache, {2});
  run(cache, {3, 4});  // evicts 2 (seen once: dropped) and 1 (seen twice: demoted)
  EXPECT_TRUE(cache.contains(1, 1));
  EXPECT_FALSE(cache.contains(1, 2));
  EXPECT_EQ(cache.traffic().flow(CacheEventKind::kDrop, 0, -1).blocks, 1);
}

TEST(TieredCache, NoPromotionOnHitServesFromBelowAndDiscardsAfterwards) {
  TierSpec dram = make_tier("dram", 8);
  dram.promote_on_hit = false;
  TieredCache cache({make_tier("hbm", 2), dram});
  run(cache, {1});
  run(cache, {2, 3});  // 1 demoted
  Admission admission;
  ASSERT_TRUE(cache.admit(std::vector<uint64_t>{1}, admission));
  EXPECT_TRUE(cache.contains(0, 1));  // the running request has it in HBM
  cache.release(admission);
  EXPECT_FALSE(cache.contains(0, 1));
  EXPECT_TRUE(cache.contains(1, 1));
}

TEST(TieredCache, ShrinkingATierEvictsAndRefusesBelowPinned) {
  TieredCache cache({make_tier("hbm", 4), make_tier("dram", 4)});
  const int64_t block_bytes = cache.tier(0).bytes_per_block();
  run(cache, {1, 2, 3});
  Admission running;
  ASSERT_TRUE(cache.admit(std::vector<uint64_t>{4}, running));
  EXPECT_FALSE(cache.set_capacity(0, 0));  // block 4 is pinned
  EXPECT_EQ(cache.used_blocks(0), 4);
  EXPECT_TRUE(cache.set_capacity(0, 2 * block_bytes));
  EXPECT_EQ(cache.capacity_blocks(0), 2);
  EXPECT_EQ(cache.used_blocks(0), 2);
  EXPECT_TRUE(cache.contains(0, 4));
  EXPECT_TRUE(cache.contains(0, 1));  // 3 and 2 (the chain's tail first) went down
  EXPECT_EQ(cache.traffic().flow(CacheEventKind::kDemote, 0, 1).blocks, 2);
}

// Capacity 3, one request 1, 2, 3 then one request 4, which evicts one block. Released last block first
// (the default) 1 is the most recent and 3 the next victim; released in request order, as a plain trace of
// the blocks would leave them, 3 is the most recent and 1 goes. The same holds for S3-FIFO's small queue,
// where the release order is the queue order.
TEST(TieredCache, RecencyOrderDecidesWhichEndOfAChainGoesFirst) {
  for (PolicyKind policy : {PolicyKind::kLru, PolicyKind::kS3Fifo}) {
    TierSpec first_recent = make_tier("hbm", 3, policy);
    TieredCache by_default({first_recent});
    run(by_default, {1, 2, 3});
    run(by_default, {4});
    EXPECT_FALSE(by_default.contains(0, 3)) << policy_name(policy);
    EXPECT_TRUE(by_default.contains(0, 1)) << policy_name(policy);

    TierSpec last_recent = make_tier("hbm", 3, policy);
    last_recent.recency_order = RecencyOrder::kLastBlockMostRecent;
    TieredCache in_request_order({last_recent});
    run(in_request_order, {1, 2, 3});
    run(in_request_order, {4});
    EXPECT_FALSE(in_request_order.contains(0, 1)) << policy_name(policy);
    EXPECT_TRUE(in_request_order.contains(0, 3)) << policy_name(policy);
  }
}

// The order is per tier: HBM (3 blocks, default) and a written-through DRAM (3 blocks, request order) both
// hold 1, 2, 3 after the first request, in opposite orders, so storing 4 evicts a different end in each.
TEST(TieredCache, RecencyOrderIsPerTier) {
  TierSpec hbm = make_tier("hbm", 3);
  TierSpec dram = make_tier("dram", 3);
  dram.write = WriteMode::kThrough;
  dram.recency_order = RecencyOrder::kLastBlockMostRecent;
  TieredCache cache({hbm, dram});
  run(cache, {1, 2, 3});  // both tiers hold 1, 2, 3; HBM's LRU order 1 2 3, DRAM's 3 2 1 (most recent first)
  run(cache, {4});        // HBM evicts 3 (a copy in DRAM: dropped); DRAM, written through, evicts 1
  EXPECT_TRUE(cache.contains(0, 1));
  EXPECT_FALSE(cache.contains(0, 3));
  EXPECT_FALSE(cache.contains(1, 1));
  EXPECT_TRUE(cache.contains(1, 3));
}

// Block 2 is first seen after 1, so 1 is its parent; a later chain reaches 2 through 5 instead (a trace
// with prefix violations). Pinned for that request, 2 must not keep 1 from being evicted.
TEST(TieredCache, PrefixAwareHoldYieldsToPinnedChildrenOfInconsistentChains) {
  TierSpec hbm = make_tier("hbm", 2);
  hbm.prefix_aware = true;
  TieredCache cache({hbm});
  run(cache, {1, 2});
  Admission admission;
  ASSERT_TRUE(cache.admit(std::vector<uint64_t>{5, 2}, admission));
  EXPECT_FALSE(cache.contains(0, 1));
  EXPECT_TRUE(cache.contains(0, 5));
  cache.release(admission);
}

}  // namespace
}  // namespace kvtier
