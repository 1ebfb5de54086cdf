// Property tests: random engine-like runs (concurrent requests, capacity changes) over many tier
// configurations, with a fixed seed, checking after every step that
//   - no tier is over capacity, and every pinned block is in tier 0;
//   - replaying the events alone rebuilds exactly what the cache says it holds (every byte that left a
//     tier was demoted or dropped and counted), with bytes in each tier's layout;
//   - no block of an exclusive tier is also in a tier above it;
//   - with prefix-aware tiers, no cached block has a parent that left the hierarchy, and no block is evicted
//     from such a tier while an unpinned child of it is cached there (leaves go first).
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "sim/cache/cache_test_support.h"
#include "sim/cache/tiered_cache.h"

namespace kvtier {
namespace {

using testing::make_tier;

// Rebuilds tier contents from events.
class ShadowCache : public CacheEventSink {
 public:
  // `parents` are the run's first-seen parents and `pins` the blocks its running requests pin, for the
  // leaf-first check; `releasing` is set while release() drops the transient blocks it gives back, which
  // are not evictions.
  ShadowCache(const TieredCache& cache, const std::map<uint64_t, uint64_t>& parents,
              const std::map<uint64_t, int>& pins, const bool& releasing)
      : cache_(cache), parents_(parents), pins_(pins), releasing_(releasing), contents_(cache.tier_count()) {
    for (auto [child, parent] : parents) children_[parent].push_back(child);
  }

  void on_event(const CacheEvent& e) override {
    if (e.from_tier >= 0) {
      EXPECT_EQ(e.from_bytes, cache_.tier(e.from_tier).bytes_per_block());
    }
    if (e.to_tier >= 0) {
      EXPECT_EQ(e.to_bytes, cache_.tier(e.to_tier).bytes_per_block());
    }
    bool leaves_source =
        e.kind == CacheEventKind::kDemote || e.kind == CacheEventKind::kDrop ||
        (e.kind == CacheEventKind::kPromote && cache_.tier(e.from_tier).placement == Placement::kExclusive);
    if (leaves_source) {
      EXPECT_EQ(contents_[e.from_tier].erase(e.block), 1u) << event_kind_name(e.kind);
    }
    if (e.kind == CacheEventKind::kDemote || e.kind == CacheEventKind::kDrop) check_leaf_first(e);
    if (e.to_tier >= 0) {
      EXPECT_TRUE(contents_[e.to_tier].insert(e.block).second) << event_kind_name(e.kind);
    }
    all_blocks_.insert(e.block);
  }

  void check_against_cache(const std::map<uint64_t, uint64_t>& parents) const {
    for (int t = 0; t < cache_.tier_count(); ++t) {
      ASSERT_LE(cache_.used_blocks(t), cache_.capacity_blocks(t)) << "tier " << t;
      ASSERT_EQ(static_cast<int64_t>(contents_[t].size()), cache_.used_blocks(t)) << "tier " << t;
      for (uint64_t block : all_blocks_) ASSERT_EQ(contents_[t].count(block) == 1, cache_.contains(t, block));
      if (cache_.tier(t).placement == Placement::kExclusive) {
        for (uint64_t block : contents_[t]) {
          for (int above = 0; above < t; ++above) ASSERT_FALSE(contents_[above].count(block)) << block;
        }
      }
      if (cache_.tier(t).prefix_aware) {
        for (uint64_t block : contents_[t]) {
          auto parent = parents.find(block);
          if (parent != parents.end()) {
            ASSERT_TRUE(cached_anywhere(parent->second)) << block;
          }
        }
      }
    }
  }

  bool cached_anywhere(uint64_t block) const {
    for (const auto& tier : contents_) {
      if (tier.count(block)) return true;
    }
    return false;
  }

 private:
  bool pinned(uint64_t block) const {
    auto it = pins_.find(block);
    return it != pins_.end() && it->second > 0;
  }
  // An eviction, not an orphan's drop (its parent gone) nor a drop that makes way for a pinned block.
  void check_leaf_first(const CacheEvent& e) const {
    if (releasing_ || !cache_.tier(e.from_tier).prefix_aware || pinned(e.block)) return;
    auto parent = parents_.find(e.block);
    if (parent != parents_.end() && !cached_anywhere(parent->second)) return;
    auto children = children_.find(e.block);
    if (children == children_.end()) return;
    for (uint64_t child : children->second) {
      EXPECT_FALSE(contents_[e.from_tier].count(child) && !pinned(child))
          << "block " << e.block << " left tier " << e.from_tier << " before its child " << child;
    }
  }

  const TieredCache& cache_;
  const std::map<uint64_t, uint64_t>& parents_;
  const std::map<uint64_t, int>& pins_;
  const bool& releasing_;
  std::map<uint64_t, std::vector<uint64_t>> children_;
  std::vector<std::set<uint64_t>> contents_;
  std::set<uint64_t> all_blocks_;
};

struct Scenario {
  std::string name;
  std::vector<TierSpec> tiers;
};

std::vector<Scenario> scenarios() {
  std::vector<Scenario> out;
  for (PolicyKind policy : {PolicyKind::kLru, PolicyKind::kLfu, PolicyKind::kArc, PolicyKind::kS3Fifo}) {
    for (int variant = 0; variant < 4; ++variant) {
      TierSpec hbm = make_tier("hbm", 24, policy, 8);
      TierSpec dram = make_tier("dram", 40, policy, 2);
      TierSpec nvme = make_tier("nvme", 80, policy, 2);
      dram.placement = variant % 2 ? Placement::kExclusive : Placement::kInclusive;
      nvme.write = variant == 2 ? WriteMode::kThrough : WriteMode::kSpill;
      nvme.admit_after = variant == 3 ? 2 : 1;
      dram.promote_on_hit = variant != 2;
      bool prefix_aware = variant >= 2;
      hbm.prefix_aware = dram.prefix_aware = nvme.prefix_aware = prefix_aware;
      out.push_back({policy_name(policy) + "_variant" + std::to_string(variant), {hbm, dram, nvme}});
    }
  }
  return out;
}

class CacheInvariants : public ::testing::TestWithParam<Scenario> {};

TEST_P(CacheInvariants, HoldUnderRandomConcurrentRequests) {
  auto requests = testing::random_requests(3000, 30, 14, 1234);
  std::map<uint64_t, uint64_t> parents;
  for (const Request& r : requests) {
    for (size_t i = 1; i < r.block_ids.size(); ++i) parents.emplace(r.block_ids[i], r.block_ids[i - 1]);
  }
  std::map<uint64_t, int> pins;  // by running requests, counted before the cache pins them
  bool releasing = false;
  TieredCache cache(GetParam().tiers);
  ShadowCache shadow(cache, parents, pins, releasing);
  cache.set_event_sink(&shadow);
  auto pin = [&pins](const Request& r, int delta) {
    for (uint64_t id : std::set<uint64_t>(r.block_ids.begin(), r.block_ids.end())) pins[id] += delta;
  };
  std::mt19937 rng(99);
  std::vector<std::pair<Admission, const Request*>> running;
  int64_t admitted = 0;
  for (const Request& request : requests) {
    Admission admission;
    pin(request, +1);
    if (cache.admit(request.block_ids, admission)) {
      ++admitted;
      running.emplace_back(std::move(admission), &request);
    } else {
      pin(request, -1);
    }
    while (running.size() > 3 || (!running.empty() && rng() % 2)) {
      size_t victim = rng() % running.size();
      pin(*running[victim].second, -1);
      releasing = true;
      cache.release(running[victim].first);
      releasing = false;
      running.erase(running.begin() + static_cast<long>(victim));
    }
    if (rng() % 50 == 0) {
      int64_t blocks = 14 + static_cast<int64_t>(rng() % 20);
      cache.set_capacity(0, blocks * cache.tier(0).bytes_per_block());
    }
    for (const auto& [admission, pinned] : running) {
      for (uint64_t id : pinned->block_ids) ASSERT_TRUE(cache.contains(0, id)) << "pinned block " << id;
    }
    ASSERT_NO_FATAL_FAILURE(shadow.check_against_cache(parents));
  }
  EXPECT_GT(admitted, 2000);
}

INSTANTIATE_TEST_SUITE_P(Configurations, CacheInvariants, ::testing::ValuesIn(scenarios()),
                         [](const auto& info) { return info.param.name; });

// Blocks cached anywhere whose parent is cached nowhere, after every request.
int count_orphans(const std::vector<Request>& requests, std::vector<TierSpec> tiers) {
  TieredCache cache(std::move(tiers));
  std::map<uint64_t, uint64_t> parents;
  auto cached = [&cache](uint64_t block) {
    for (int t = 0; t < cache.tier_count(); ++t) {
      if (cache.contains(t, block)) return true;
    }
    return false;
  };
  int orphans = 0;
  Admission admission;
  for (const Request& r : requests) {
    cache.admit(r.block_ids, admission);
    cache.release(admission);
    for (size_t i = 1; i < r.block_ids.size(); ++i) parents[r.block_ids[i]] = r.block_ids[i - 1];
    for (auto [child, parent] : parents) orphans += cached(child) && !cached(parent);
  }
  return orphans;
}

// The orphan check can fail: with an admission filter on the last tier, plain eviction of every policy
// leaves blocks behind whose parent is gone; prefix-aware eviction leaves none.
TEST(CacheInvariants, PrefixAwareEvictionRemovesTheOrphansPlainEvictionLeaves) {
  auto requests = testing::random_requests(2000, 30, 14, 77);
  for (PolicyKind policy : {PolicyKind::kLru, PolicyKind::kLfu, PolicyKind::kArc, PolicyKind::kS3Fifo}) {
    TierSpec hbm = make_tier("hbm", 16, policy);
    TierSpec dram = make_tier("dram", 40, policy);
    TierSpec nvme = make_tier("nvme", 60, policy);
    nvme.admit_after = 2;
    EXPECT_GT(count_orphans(requests, {hbm, dram, nvme}), 0) << policy_name(policy);
    hbm.prefix_aware = dram.prefix_aware = nvme.prefix_aware = true;
    EXPECT_EQ(count_orphans(requests, {hbm, dram, nvme}), 0) << policy_name(policy);
  }
}

}  // namespace
}  // namespace kvtier
