// A cluster's KV pool: one tier of blocks shared by every replica (SharedTier, sim/serving/shared_tier.h),
// with a capacity and an eviction policy of sim/cache's, as Mooncake Store and SGLang HiCache's L3 keep
// KV for a whole cluster. Where its bytes live and how they move is the engine's business.
#pragma once

#include <memory>
#include <vector>

#include "sim/cache/eviction_policy.h"
#include "sim/cache/slot_lists.h"
#include "sim/core/id_index.h"
#include "sim/serving/shared_tier.h"

namespace kvtier {

class SharedPool : public SharedTier {
 public:
  // REQUIRES: spec's capacity holds at least one block.
  explicit SharedPool(TierSpec spec);

  const TierSpec& spec() const override { return spec_; }
  int64_t leading_run(std::span<const uint64_t> block_ids) override;
  bool store(uint64_t block) override;

  int64_t used_blocks() const { return used_; }
  int64_t capacity_blocks() const { return capacity_; }
  int64_t stored_blocks() const { return stored_; }  // stores so far
  int64_t evicted_blocks() const { return evicted_; }
  int64_t hit_blocks() const { return hits_; }  // blocks leading_run() found so far

 private:
  TierSpec spec_;
  int64_t capacity_;
  std::unique_ptr<EvictionPolicy> policy_;
  IdIndex slots_;                  // block id -> slot, for every block ever stored
  std::vector<uint8_t> resident_;  // per slot
  int64_t used_ = 0, stored_ = 0, evicted_ = 0, hits_ = 0;
};

}  // namespace kvtier
