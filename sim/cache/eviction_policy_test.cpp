// Each policy against hand-worked sequences, and the hold contract under random operations.
#include "eviction_policy.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

namespace kvtier {
namespace {

std::unique_ptr<EvictionPolicy> policy(PolicyKind kind, int64_t capacity) {
  auto p = make_policy(kind);
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

// Capacity 10: small queue target 1, ghost 9. 1 leaves S unreferenced (to the ghost); stored again it
// goes straight to M. 2 was referenced in S, so it moves to M instead of being evicted; M's oldest
// unreferenced block, 1, is the victim.
TEST(S3FifoPolicy, GhostReturnsToMainAndReferencedBlocksSurviveSmall) {
  auto s3 = policy(PolicyKind::kS3Fifo, 10);
  s3->insert(1);
  s3->insert(2);
  EXPECT_EQ(s3->victim(), 1u);
  s3->erase(1);
  s3->insert(1);  // from the ghost: main
  s3->hit(2);
  EXPECT_EQ(s3->victim(), 1u);
  s3->erase(1);
  EXPECT_EQ(s3->victim(), 2u);  // now in main with its frequency spent
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
