// Each policy against hand-worked sequences, and the hold contract under random operations.
#include "sim/cache/eviction_policy.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <stdexcept>

namespace kvtier {
namespace {

std::unique_ptr<EvictionPolicy> policy(PolicyKind kind, int64_t capacity, const PolicyOptions& options = {}) {
  auto p = make_policy(kind, options);
  p->set_capacity(capacity);
  return p;
}

TEST(LruPolicy, EvictsLeastRecentlyReferenced) {
  auto lru = policy(PolicyKind::kLru, 3);
  lru->insert(1);
  lru->insert(2);
  lru->insert(3);
  lru->hit(1);
  EXPECT_EQ(lru->victim(), 2u);
  lru->hold(2);
  EXPECT_EQ(lru->victim(), 3u);
  lru->unhold(2);  // released: most recent now
  lru->erase(3);
  EXPECT_EQ(lru->victim(), 1u);
  lru->erase(1);
  EXPECT_EQ(lru->victim(), 2u);
  lru->erase(2);
  EXPECT_EQ(lru->victim(), kNoSlot);
}

TEST(LfuPolicy, EvictsLeastFrequentThenLeastRecent) {
  auto lfu = policy(PolicyKind::kLfu, 5);
  for (uint32_t slot : {1u, 2u, 3u}) lfu->insert(slot);
  lfu->hit(1);
  lfu->hit(1);
  lfu->hit(2);
  EXPECT_EQ(lfu->victim(), 3u);  // 1 reference against 2 and 3
  lfu->erase(3);
  EXPECT_EQ(lfu->victim(), 2u);  // 2 references against 3
  lfu->insert(4);
  lfu->insert(5);
  EXPECT_EQ(lfu->victim(), 4u);  // tie at 1 reference: the older
  lfu->hold(4);
  lfu->hit(4);  // referenced while held: counted, back in its new bucket on release
  lfu->unhold(4);
  EXPECT_EQ(lfu->victim(), 5u);
}

TEST(LfuPolicy, ForgetsFrequencyOnEviction) {
  auto lfu = policy(PolicyKind::kLfu, 5);
  lfu->insert(1);
  lfu->hit(1);
  lfu->hit(1);
  lfu->erase(1);
  lfu->insert(2);
  lfu->hit(2);
  lfu->insert(1);
  EXPECT_EQ(lfu->victim(), 1u);
}

// Capacity 2. 1 and 2 stored, 1 referenced again (T2). The victim is T1's 2; it becomes a ghost in B1.
// Storing 2 again finds it in B1: p grows from 0 to 1 and 2 enters T2. With 3 new in T1 and |T1| = 1 not
// above p = 1, the victim now comes from T2 (its LRU end, 1), where without the ghost hit it was 3.
TEST(ArcPolicy, GhostHitInB1GrowsTheRecencyTarget) {
  auto arc = policy(PolicyKind::kArc, 2);
  arc->insert(1);
  arc->insert(2);
  arc->hit(1);
  EXPECT_EQ(arc->victim(), 2u);
  arc->erase(2);
  arc->insert(2);
  arc->insert(3);
  EXPECT_EQ(arc->victim(), 1u);

  auto plain = policy(PolicyKind::kArc, 2);
  plain->insert(1);
  plain->insert(5);
  plain->hit(1);
  plain->hit(5);
  plain->insert(3);
  EXPECT_EQ(plain->victim(), 3u);  // p = 0: T1 goes first
}

// Capacity 2. 1 and 2 stored, 1 referenced again (T2); 2 is evicted to B1 and 3 stored (T1 = {3}, T2 =
// {1}, p = 0). 2 returns: announced, it raises p to 1 before the victim is chosen, so |T1| = 1 no longer
// exceeds p and the victim is T2's 1 (adapting after the eviction would have taken 3).
TEST(ArcPolicy, GhostHitAdaptsBeforeTheVictimIsChosen) {
  auto arc = policy(PolicyKind::kArc, 2);
  arc->insert(1);
  arc->insert(2);
  arc->hit(1);
  EXPECT_EQ(arc->victim(), 2u);
  arc->erase(2);
  arc->insert(3);
  arc->prepare_insert(2);
  EXPECT_EQ(arc->victim(), 1u);
  arc->erase(1);
  arc->insert(2);
  EXPECT_EQ(arc->victim(), 2u);  // T1 = {3} does not exceed p = 1: T2 = {2} goes
}

// Capacity 10: S is due whenever it holds a block (10 × 1 >= 10), G keeps 9. 1 leaves S unreferenced
// (to G); stored again it goes straight to M. 2, referenced once, is below the paper's threshold of 2
// and is evicted from S; referenced twice it moves to M instead, and M's oldest block, 1, goes.
TEST(S3FifoPolicy, BlocksReferencedTwiceInSmallMoveToMain) {
  auto s3 = policy(PolicyKind::kS3Fifo, 10);
  s3->insert(1);
  s3->insert(2);
  EXPECT_EQ(s3->victim(), 1u);
  s3->erase(1);
  s3->insert(1);  // from the ghost: main
  s3->hit(2);
  EXPECT_EQ(s3->victim(), 2u);
  s3->hit(2);
  EXPECT_EQ(s3->victim(), 1u);  // 2 moved to main with its frequency cleared
  s3->erase(1);
  EXPECT_EQ(s3->victim(), 2u);
}

TEST(S3FifoPolicy, MoveToMainThresholdIsAParameter) {
  auto s3 = policy(PolicyKind::kS3Fifo, 10, PolicyOptions{.move_to_main_threshold = 1});
  s3->insert(1);
  s3->insert(2);
  s3->erase(1);
  s3->insert(1);
  s3->hit(2);
  EXPECT_EQ(s3->victim(), 1u);  // one reference is enough
  EXPECT_THROW(policy(PolicyKind::kS3Fifo, 10, PolicyOptions{.move_to_main_threshold = 4}),
               std::invalid_argument);
}

// Capacity 20: S's share is 2, M's 18. With 1..18 in M (returned from G) and 19, 20 in S, 19 referenced
// twice moves to M, which then holds 19 > 18: M evicts its oldest, 1, and the step is not over
// (eviction_pending) until S gives up a block too, 20.
TEST(S3FifoPolicy, OverfillingMainEvictsFromMainThenFromSmall) {
  auto s3 = policy(PolicyKind::kS3Fifo, 20);
  for (uint32_t slot = 1; slot <= 18; ++slot) s3->insert(slot);
  for (uint32_t slot = 1; slot <= 18; ++slot) s3->erase(slot);
  for (uint32_t slot = 1; slot <= 20; ++slot) s3->insert(slot);
  s3->hit(19);
  s3->hit(19);
  EXPECT_FALSE(s3->eviction_pending());
  EXPECT_EQ(s3->victim(), 1u);
  s3->erase(1);
  EXPECT_TRUE(s3->eviction_pending());
  EXPECT_EQ(s3->victim(), 20u);
  s3->erase(20);
  EXPECT_FALSE(s3->eviction_pending());
}

TEST(S3FifoPolicy, MainReinsertsReferencedBlocks) {
  auto s3 = policy(PolicyKind::kS3Fifo, 10);
  s3->insert(1);
  s3->insert(2);
  s3->erase(1);
  s3->erase(2);
  s3->insert(1);  // both return from the ghost into main, 1 older
  s3->insert(2);
  s3->hit(1);
  EXPECT_EQ(s3->victim(), 2u);  // 1 is reinserted with its frequency decremented
  s3->erase(2);
  EXPECT_EQ(s3->victim(), 1u);
}

class EveryPolicy : public ::testing::TestWithParam<PolicyKind> {};

// Random operations against a model of what is resident and what is held: the victim is always a resident,
// unheld block, and there is one whenever such a block exists.
TEST_P(EveryPolicy, VictimIsAlwaysResidentAndNotHeld) {
  auto p = policy(GetParam(), 16);
  std::mt19937 rng(7);
  std::set<uint32_t> evictable, held;
  for (int step = 0; step < 20000; ++step) {
    uint32_t slot = rng() % 40;
    bool resident = evictable.count(slot) || held.count(slot);
    switch (rng() % 5) {
      case 0:
        if (!resident) {
          p->insert(slot);
          evictable.insert(slot);
        }
        break;
      case 1:
        if (resident) p->hit(slot);
        break;
      case 2:
        if (evictable.count(slot)) {
          p->hold(slot);
          evictable.erase(slot);
          held.insert(slot);
        } else if (held.count(slot)) {
          p->unhold(slot);
          held.erase(slot);
          evictable.insert(slot);
        }
        break;
      case 3:
        if (resident) {
          p->erase(slot);
          evictable.erase(slot);
          held.erase(slot);
        }
        break;
      default:
        uint32_t victim = p->victim();
        if (evictable.empty()) {
          ASSERT_EQ(victim, kNoSlot);
        } else {
          ASSERT_TRUE(evictable.count(victim)) << "step " << step << " victim " << victim;
          p->erase(victim);
          evictable.erase(victim);
        }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Policies, EveryPolicy,
                         ::testing::Values(PolicyKind::kLru, PolicyKind::kLfu, PolicyKind::kArc,
                                           PolicyKind::kS3Fifo),
                         [](const auto& info) { return policy_name(info.param); });

}  // namespace
}  // namespace kvtier
