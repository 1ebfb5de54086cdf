// ARC and S3-FIFO against literal transcriptions of their papers' pseudocode (arc_reference.h,
// s3fifo_reference.h): the same hit/miss sequence, block by block, on random and adversarial sequences
// at several capacities.
//
// The policies are driven as a one-tier cache drives them for one-block requests: a resident block is a
// hit(); a missing one is announced (prepare_insert), victims are erased while the tier is full or the
// policy has an eviction step under way (eviction_pending), and then it is inserted.
#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "sim/cache/arc_reference.h"
#include "sim/cache/eviction_policy.h"
#include "sim/cache/s3fifo_reference.h"

namespace kvtier {
namespace {

class OneTierDriver {
 public:
  OneTierDriver(PolicyKind kind, int64_t capacity, const PolicyOptions& options = {})
      : policy_(make_policy(kind, options)), capacity_(capacity) {
    policy_->set_capacity(capacity);
  }

  bool access(uint32_t block) {
    if (resident_.count(block)) {
      policy_->hit(block);
      return true;
    }
    policy_->prepare_insert(block);
    while (static_cast<int64_t>(resident_.size()) + 1 > capacity_ || policy_->eviction_pending()) {
      uint32_t victim = policy_->victim();
      EXPECT_TRUE(resident_.count(victim)) << "victim " << victim << " is not resident";
      policy_->erase(victim);
      resident_.erase(victim);
    }
    policy_->insert(block);
    resident_.insert(block);
    return false;
  }

 private:
  std::unique_ptr<EvictionPolicy> policy_;
  int64_t capacity_;
  std::set<uint32_t> resident_;
};

struct Sequence {
  std::string name;
  std::vector<uint32_t> blocks;
};

// Random and adversarial sequences sized to `capacity`: uniform and skewed reuse, a loop one larger than
// the cache (LRU's worst case), a hot set under scans (ghost hits in both ARC lists, p moving both ways),
// alternating working sets, and short bursts that push S3-FIFO's frequencies past every threshold.
std::vector<Sequence> sequences(int64_t capacity, uint32_t seed) {
  const auto c = static_cast<uint32_t>(capacity);
  const int length = 4000;
  std::mt19937 rng(seed);
  auto uniform = [&](uint32_t n) { return static_cast<uint32_t>(rng() % n); };
  std::vector<Sequence> out;

  Sequence random{"uniform", {}};
  for (int i = 0; i < length; ++i) random.blocks.push_back(uniform(2 * c + 3));
  out.push_back(random);

  Sequence skewed{"skewed", {}};
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (int i = 0; i < length; ++i) {
    double u = unit(rng);
    skewed.blocks.push_back(static_cast<uint32_t>((4 * c + 8) * u * u * u));
  }
  out.push_back(skewed);

  Sequence loop{"loop", {}};
  for (int i = 0; i < length; ++i) loop.blocks.push_back(static_cast<uint32_t>(i) % (c + 1));
  out.push_back(loop);

  Sequence scans{"hot_set_under_scans", {}};
  uint32_t next_cold = 10 * c + 10;
  while (static_cast<int>(scans.blocks.size()) < length) {
    for (uint32_t k = 0; k < 2 * c; ++k) scans.blocks.push_back(uniform(c / 2 + 1));
    uint32_t scan = 1 + uniform(2 * c);
    for (uint32_t k = 0; k < scan; ++k) scans.blocks.push_back(next_cold++ % (40 * c + 40) + 10 * c + 10);
  }
  out.push_back(scans);

  Sequence phases{"alternating_working_sets", {}};
  for (int phase = 0; static_cast<int>(phases.blocks.size()) < length; ++phase) {
    uint32_t base = phase % 2 ? 0 : 3 * c + 3;
    uint32_t size = phase % 2 ? c / 2 + 1 : 2 * c + 1;
    for (uint32_t k = 0; k < 3 * c + 5; ++k) phases.blocks.push_back(base + uniform(size));
  }
  out.push_back(phases);

  Sequence bursts{"bursts", {}};
  while (static_cast<int>(bursts.blocks.size()) < length) {
    uint32_t block = uniform(3 * c + 4);
    for (uint32_t k = 0, n = 1 + uniform(4); k < n; ++k) bursts.blocks.push_back(block);
  }
  out.push_back(bursts);
  return out;
}

const std::vector<int64_t> kCapacities = {1, 2, 3, 4, 5, 7, 10, 16, 25, 64};

// The index of the first access where the two disagree, or -1.
int first_difference(const std::vector<uint32_t>& blocks, const std::function<bool(uint32_t)>& policy,
                     const std::function<bool(uint32_t)>& reference) {
  for (size_t i = 0; i < blocks.size(); ++i) {
    if (policy(blocks[i]) != reference(blocks[i])) return static_cast<int>(i);
  }
  return -1;
}

TEST(ArcMatchesPaper, SameHitsAsFig4OnEverySequence) {
  for (int64_t capacity : kCapacities) {
    for (const Sequence& sequence : sequences(capacity, 11 + static_cast<uint32_t>(capacity))) {
      OneTierDriver arc(PolicyKind::kArc, capacity);
      testing::ArcReference reference(capacity);
      int at = first_difference(
          sequence.blocks, [&](uint32_t b) { return arc.access(b); },
          [&](uint32_t b) { return reference.access(b); });
      EXPECT_EQ(at, -1) << sequence.name << " at capacity " << capacity;
    }
  }
}

TEST(S3FifoMatchesPaper, SameHitsAsAlgorithm1AtEveryThreshold) {
  for (int threshold : {1, 2, 3}) {
    for (int64_t capacity : kCapacities) {
      for (const Sequence& sequence : sequences(capacity, 29 + static_cast<uint32_t>(capacity))) {
        OneTierDriver s3fifo(PolicyKind::kS3Fifo, capacity,
                             PolicyOptions{.move_to_main_threshold = threshold});
        testing::S3FifoReference reference(capacity, threshold);
        int at = first_difference(
            sequence.blocks, [&](uint32_t b) { return s3fifo.access(b); },
            [&](uint32_t b) { return reference.access(b); });
        EXPECT_EQ(at, -1) << sequence.name << " at capacity " << capacity << ", threshold " << threshold;
      }
    }
  }
}

TEST(S3FifoMatchesPaper, DefaultThresholdIsThePapers) {
  for (int64_t capacity : {10, 64}) {
    for (const Sequence& sequence : sequences(capacity, 5)) {
      OneTierDriver s3fifo(PolicyKind::kS3Fifo, capacity);
      testing::S3FifoReference reference(capacity, 2);
      int at = first_difference(
          sequence.blocks, [&](uint32_t b) { return s3fifo.access(b); },
          [&](uint32_t b) { return reference.access(b); });
      EXPECT_EQ(at, -1) << sequence.name << " at capacity " << capacity;
    }
  }
}

// The ARC reference itself on a sequence worked by hand (c = 5, blocks a..l as 1..12): p follows the
// paper's δ, fractional once the ghost lists are uneven.
TEST(ArcReference, FollowsFig4ByHand) {
  testing::ArcReference arc(5);
  for (uint64_t block : {1, 2, 3, 4, 5}) EXPECT_FALSE(arc.access(block));  // T1 = e d c b a
  for (uint64_t block : {1, 2, 3}) EXPECT_TRUE(arc.access(block));         // T1 = e d, T2 = c b a
  EXPECT_FALSE(arc.access(6));  // IV.B: REPLACE takes T1's d to B1 (|T1| = 2 > p = 0)
  EXPECT_FALSE(arc.access(7));  // IV.B: e to B1. T1 = g f, B1 = e d
  EXPECT_FALSE(arc.access(4));  // II: δ1 = 1 (|B1| >= |B2|), p = 1; REPLACE takes f (2 > 1) to B1
  EXPECT_DOUBLE_EQ(arc.p(), 1.0);
  EXPECT_FALSE(arc.access(5));  // II: p = 2; |T1| = 1 is not above p: T2's a goes to B2
  EXPECT_FALSE(arc.access(6));  // II: |B1| = |B2| = 1, δ1 = 1, p = 3; T2's b to B2
  EXPECT_DOUBLE_EQ(arc.p(), 3.0);
  // T1 = g, T2 = f e d c, B1 = {}, B2 = b a. New h, i, j push T2's c, d, e to B2 (|T1| <= 3).
  for (uint64_t block : {8, 9, 10}) EXPECT_FALSE(arc.access(block));
  // k: total = 2c, so B2's LRU a is dropped; REPLACE takes T1's g (4 > 3) to B1.
  EXPECT_FALSE(arc.access(11));
  // l: L1 = |T1| + |B1| = c, so B1's g is dropped; REPLACE takes h to B1.
  EXPECT_FALSE(arc.access(12));
  // T1 = l k j i, T2 = f, B1 = h, B2 = e d c b. e is in B2: δ2 = 1, p = 2; REPLACE takes i to B1.
  EXPECT_FALSE(arc.access(5));
  EXPECT_DOUBLE_EQ(arc.p(), 2.0);
  // h is in B1 with |B1| = 2 < |B2| = 3: δ1 = 3 / 2, where whole steps would give 1.
  EXPECT_FALSE(arc.access(8));
  EXPECT_DOUBLE_EQ(arc.p(), 3.5);
  EXPECT_TRUE(arc.access(5));  // e is in T2
}

}  // namespace
}  // namespace kvtier
