// S3-FIFO (Yang et al., SOSP'23). New blocks enter a small FIFO S sized at 10 % of capacity; a block
// leaving S that was referenced again since it was stored moves to the main FIFO M, otherwise it is evicted
// and remembered in the ghost FIFO G. A stored block found in G goes straight to M. Leaving M, a block with
// a non-zero 2-bit frequency is reinserted at M's head with its frequency decremented.
#include <algorithm>

#include "eviction_policy.h"

namespace kvtier {
namespace {

constexpr uint8_t kMaxFrequency = 3;

class S3FifoPolicy final : public EvictionPolicy {
 public:
  void set_capacity(int64_t blocks) override {
    small_target_ = std::max<int64_t>(1, blocks / 10);
    ghost_limit_ = std::max<int64_t>(0, blocks - small_target_);
    while (ghost_.size > ghost_limit_) drop_oldest_ghost();
  }
  void insert(uint32_t slot) override {
    grow(slot);
    bool returning = where_[slot] == kGhost;
    if (returning) lists_.unlink(ghost_, slot);
    frequency_[slot] = 0;
    push(slot, returning ? kMain : kSmall);
  }
  void hit(uint32_t slot) override {
    frequency_[slot] = std::min<uint8_t>(kMaxFrequency, frequency_[slot] + 1);
  }
  void hold(uint32_t slot) override {
    lists_.unlink(where_[slot] == kSmall ? small_ : main_, slot);
    where_[slot] = where_[slot] == kSmall ? kHeldSmall : kHeldMain;
  }
  void unhold(uint32_t slot) override { push(slot, where_[slot] == kHeldSmall ? kSmall : kMain); }
  void erase(uint32_t slot) override {
    bool from_small = where_[slot] == kSmall || where_[slot] == kHeldSmall;
    if (where_[slot] == kSmall) lists_.unlink(small_, slot);
    if (where_[slot] == kMain) lists_.unlink(main_, slot);
    where_[slot] = kNone;
    if (from_small && ghost_limit_ > 0) {
      lists_.push_front(ghost_, slot);
      where_[slot] = kGhost;
      if (ghost_.size > ghost_limit_) drop_oldest_ghost();
    }
  }
  uint32_t victim() override {
    while (small_.size + main_.size > 0) {
      if (small_.size > 0 && (small_.size >= small_target_ || main_.size == 0)) {
        uint32_t oldest = small_.tail;
        if (frequency_[oldest] == 0) return oldest;
        lists_.unlink(small_, oldest);
        frequency_[oldest] = 0;
        push(oldest, kMain);
      } else {
        uint32_t oldest = main_.tail;
        if (frequency_[oldest] == 0) return oldest;
        --frequency_[oldest];
        lists_.move_to_front(main_, oldest);
      }
    }
    return kNoSlot;
  }

 private:
  enum Where : uint8_t { kNone, kSmall, kMain, kHeldSmall, kHeldMain, kGhost };

  void grow(uint32_t slot) {
    if (slot < where_.size()) return;
    size_t size = std::max<size_t>(slot + 1, where_.size() * 2);
    where_.resize(size, kNone);
    frequency_.resize(size, 0);
  }
  void push(uint32_t slot, Where queue) {
    lists_.push_front(queue == kSmall ? small_ : main_, slot);
    where_[slot] = queue;
  }
  void drop_oldest_ghost() {
    uint32_t oldest = ghost_.tail;
    lists_.unlink(ghost_, oldest);
    where_[oldest] = kNone;
  }

  SlotLists lists_;
  SlotLists::List small_, main_, ghost_;
  int64_t small_target_ = 1;
  int64_t ghost_limit_ = 0;
  std::vector<uint8_t> where_;
  std::vector<uint8_t> frequency_;
};

}  // namespace

std::unique_ptr<EvictionPolicy> make_s3fifo_policy() {
  return std::make_unique<S3FifoPolicy>();
}

}  // namespace kvtier
