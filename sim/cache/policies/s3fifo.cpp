// S3-FIFO (Yang et al., SOSP'23, Algorithm 1). New blocks enter a small FIFO S; a block found in the ghost
// FIFO G goes to the main FIFO M instead. A reference raises a block's frequency, capped at 3.
// Evicting takes from S while S holds at least 10 % of the capacity, else from M:
//   from S: S's oldest block moves to M's head with its frequency cleared if it was referenced at least
//           `move_to_main_threshold` times (the paper's freq > 1: 2); if that leaves M above its 90 %
//           share, M evicts one block first and the step goes on (eviction_pending()). The first block
//           not moved is the victim and is remembered in G;
//   from M: M's oldest block is reinserted at M's head with its frequency decremented while non-zero;
//           the first with frequency 0 is the victim.
// G keeps as many entries as M's share (0.9 × capacity, rounded down), oldest dropped first. Held blocks
// count in the size of the queue they belong to.
#include <algorithm>
#include <stdexcept>

#include "sim/cache/eviction_policy.h"

namespace kvtier {
namespace {

constexpr uint8_t kMaxFrequency = 3;

class S3FifoPolicy final : public EvictionPolicy {
 public:
  explicit S3FifoPolicy(int move_to_main_threshold)
      : threshold_(static_cast<uint8_t>(move_to_main_threshold)) {
    if (move_to_main_threshold < 1 || move_to_main_threshold > kMaxFrequency) {
      throw std::invalid_argument("S3-FIFO's move-to-main threshold is 1, 2 or 3 references");
    }
  }

  void set_capacity(int64_t blocks) override {
    capacity_ = blocks;
    ghost_limit_ = 9 * blocks / 10;
    while (ghost_.size > ghost_limit_) drop_oldest_ghost();
  }
  void insert(uint32_t slot) override {
    grow(slot);
    bool returning = where_[slot] == kGhost;
    if (returning) lists_.unlink(ghost_, slot);
    frequency_[slot] = 0;
    push(slot, returning ? kMain : kSmall);
    moving_to_main_ = false;
  }
  void hit(uint32_t slot) override {
    frequency_[slot] = std::min<uint8_t>(kMaxFrequency, frequency_[slot] + 1);
  }
  void hold(uint32_t slot) override {
    bool small = where_[slot] == kSmall;
    lists_.unlink(small ? small_ : main_, slot);
    where_[slot] = small ? kHeldSmall : kHeldMain;
    ++(small ? held_small_ : held_main_);
  }
  void unhold(uint32_t slot) override {
    bool small = where_[slot] == kHeldSmall;
    --(small ? held_small_ : held_main_);
    push(slot, small ? kSmall : kMain);
  }
  void erase(uint32_t slot) override {
    Where was = static_cast<Where>(where_[slot]);
    if (was == kSmall) lists_.unlink(small_, slot);
    if (was == kMain) lists_.unlink(main_, slot);
    if (was == kHeldSmall) --held_small_;
    if (was == kHeldMain) --held_main_;
    where_[slot] = kNone;
    if ((was == kSmall || was == kHeldSmall) && ghost_limit_ > 0) {
      lists_.push_front(ghost_, slot);
      where_[slot] = kGhost;
      if (ghost_.size > ghost_limit_) drop_oldest_ghost();
    }
  }
  uint32_t victim() override {
    bool from_small = moving_to_main_ || 10 * (small_.size + held_small_) >= capacity_;
    moving_to_main_ = false;
    // A queue with nothing evictable (its blocks held, or a tier over capacity) yields to the other.
    uint32_t victim = from_small ? kNoSlot : main_victim();
    if (victim == kNoSlot) victim = small_victim();
    return victim != kNoSlot ? victim : main_victim();
  }
  bool eviction_pending() const override { return moving_to_main_; }

 private:
  enum Where : uint8_t { kNone, kSmall, kMain, kHeldSmall, kHeldMain, kGhost };

  // EVICTS. Returns kNoSlot when every evictable block of S moved to M without M overflowing.
  uint32_t small_victim() {
    while (small_.size > 0) {
      uint32_t oldest = small_.tail;
      if (frequency_[oldest] < threshold_) return oldest;
      lists_.unlink(small_, oldest);
      frequency_[oldest] = 0;
      push(oldest, kMain);
      if (10 * (main_.size + held_main_) > 9 * capacity_) {
        uint32_t overflow = main_victim();
        if (overflow != kNoSlot) {
          moving_to_main_ = small_.size > 0;
          return overflow;
        }
      }
    }
    return kNoSlot;
  }
  // EVICTM.
  uint32_t main_victim() {
    while (main_.size > 0) {
      uint32_t oldest = main_.tail;
      if (frequency_[oldest] == 0) return oldest;
      --frequency_[oldest];
      lists_.move_to_front(main_, oldest);
    }
    return kNoSlot;
  }
  void grow(uint32_t slot) {
    cover_slot(where_, slot, kNone);
    cover_slot(frequency_, slot, uint8_t{0});
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

  uint8_t threshold_;
  SlotLists lists_;
  SlotLists::List small_, main_, ghost_;
  int64_t held_small_ = 0;
  int64_t held_main_ = 0;
  int64_t capacity_ = 0;
  int64_t ghost_limit_ = 0;
  bool moving_to_main_ = false;  // EVICTS evicted from an overfull M and S still has blocks to go through
  std::vector<uint8_t> where_ = slot_array<uint8_t>();
  std::vector<uint8_t> frequency_ = slot_array<uint8_t>();
};

}  // namespace

std::unique_ptr<EvictionPolicy> make_s3fifo_policy(int move_to_main_threshold) {
  return std::make_unique<S3FifoPolicy>(move_to_main_threshold);
}

}  // namespace kvtier
