#include "sim/cluster/shared_pool.h"

#include <stdexcept>

namespace kvtier {

SharedPool::SharedPool(TierSpec spec)
    : spec_(std::move(spec)),
      capacity_(spec_.capacity_blocks()),
      policy_(make_policy(spec_.policy, spec_.policy_options)) {
  if (capacity_ < 1) throw std::invalid_argument("a pool must hold at least one block");
  policy_->set_capacity(capacity_);
}

int64_t SharedPool::leading_run(std::span<const uint64_t> block_ids) {
  int64_t run = 0;
  for (uint64_t id : block_ids) {
    const uint32_t slot = slots_.find(id);
    if (slot == IdIndex::kAbsent || !resident_[slot]) break;
    policy_->hit(slot);
    ++run;
  }
  hits_ += run;
  return run;
}

bool SharedPool::store(uint64_t block) {
  const uint32_t slot = slots_.insert(block, static_cast<uint32_t>(resident_.size()));
  if (slot == resident_.size()) resident_.push_back(0);
  if (resident_[slot]) return false;
  policy_->prepare_insert(slot);
  while (used_ >= capacity_ || policy_->eviction_pending()) {
    const uint32_t victim = policy_->victim();
    if (victim == kNoSlot) break;
    policy_->erase(victim);
    resident_[victim] = 0;
    --used_;
    ++evicted_;
  }
  policy_->insert(slot);
  resident_[slot] = 1;
  ++used_;
  ++stored_;
  return true;
}

}  // namespace kvtier
