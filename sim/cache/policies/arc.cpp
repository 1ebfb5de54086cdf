// ARC (Megiddo and Modha, FAST'03). T1 holds blocks referenced once since they were stored, T2 blocks
// referenced again; B1 and B2 remember blocks recently evicted from each. A stored block found in B1
// means T1 was too small: the target size p of T1 grows; found in B2, p shrinks. Victims come from T1
// while it exceeds p, else from T2. Ghost lists are trimmed as in the paper: |T1| + |B1| <= c and
// |T1| + |T2| + |B1| + |B2| <= 2c, counting held blocks as resident.
#include <algorithm>

#include "eviction_policy.h"

namespace kvtier {
namespace {

class ArcPolicy final : public EvictionPolicy {
 public:
  void set_capacity(int64_t blocks) override {
    capacity_ = blocks;
    target_t1_ = std::min(target_t1_, capacity_);
  }
  void insert(uint32_t slot) override {
    grow(slot);
    if (where_[slot] == kB1) {
      target_t1_ =
          std::min(capacity_, target_t1_ + std::max<int64_t>(1, b2_.size / std::max<int64_t>(1, b1_.size)));
      lists_.unlink(b1_, slot);
      place(slot, kT2);
    } else if (where_[slot] == kB2) {
      target_t1_ =
          std::max<int64_t>(0, target_t1_ - std::max<int64_t>(1, b1_.size / std::max<int64_t>(1, b2_.size)));
      lists_.unlink(b2_, slot);
      place(slot, kT2);
    } else {
      place(slot, kT1);
    }
  }
  void hit(uint32_t slot) override {
    switch (where_[slot]) {
      case kT1:
        lists_.unlink(t1_, slot);
        place(slot, kT2);
        break;
      case kT2:
        lists_.move_to_front(t2_, slot);
        break;
      case kHeldT1:
        where_[slot] = kHeldT2;
        --held_t1_;
        ++held_t2_;
        break;
      default:
        break;
    }
  }
  void hold(uint32_t slot) override {
    if (where_[slot] == kT1) {
      lists_.unlink(t1_, slot);
      where_[slot] = kHeldT1;
      ++held_t1_;
    } else {
      lists_.unlink(t2_, slot);
      where_[slot] = kHeldT2;
      ++held_t2_;
    }
  }
  void unhold(uint32_t slot) override {
    if (where_[slot] == kHeldT1) {
      --held_t1_;
      place(slot, kT1);
    } else {
      --held_t2_;
      place(slot, kT2);
    }
  }
  void erase(uint32_t slot) override {
    bool recency = where_[slot] == kT1 || where_[slot] == kHeldT1;
    switch (where_[slot]) {
      case kT1:
        lists_.unlink(t1_, slot);
        break;
      case kT2:
        lists_.unlink(t2_, slot);
        break;
      case kHeldT1:
        --held_t1_;
        break;
      default:
        --held_t2_;
        break;
    }
    lists_.push_front(recency ? b1_ : b2_, slot);
    where_[slot] = recency ? kB1 : kB2;
    trim_ghosts();
  }
  uint32_t victim() override {
    if (t1_.size > 0 && (t1_.size + held_t1_ > target_t1_ || t2_.size == 0)) return t1_.tail;
    return t2_.tail;
  }

 private:
  enum Where : uint8_t { kNone, kT1, kT2, kHeldT1, kHeldT2, kB1, kB2 };

  void grow(uint32_t slot) {
    if (slot >= where_.size()) where_.resize(std::max<size_t>(slot + 1, where_.size() * 2), kNone);
  }
  void place(uint32_t slot, Where list) {
    lists_.push_front(list == kT1 ? t1_ : t2_, slot);
    where_[slot] = list;
  }
  void drop_ghost(SlotLists::List& ghosts) {
    uint32_t oldest = ghosts.tail;
    lists_.unlink(ghosts, oldest);
    where_[oldest] = kNone;
  }
  void trim_ghosts() {
    int64_t t1 = t1_.size + held_t1_;
    while (b1_.size > 0 && t1 + b1_.size > capacity_) drop_ghost(b1_);
    int64_t resident = t1 + t2_.size + held_t2_;
    while (resident + b1_.size + b2_.size > 2 * capacity_ && (b1_.size > 0 || b2_.size > 0)) {
      drop_ghost(b2_.size > 0 ? b2_ : b1_);
    }
  }

  SlotLists lists_;
  SlotLists::List t1_, t2_, b1_, b2_;
  int64_t held_t1_ = 0;
  int64_t held_t2_ = 0;
  int64_t capacity_ = 0;
  int64_t target_t1_ = 0;  // p in the paper
  std::vector<uint8_t> where_;
};

}  // namespace

std::unique_ptr<EvictionPolicy> make_arc_policy() {
  return std::make_unique<ArcPolicy>();
}

}  // namespace kvtier
