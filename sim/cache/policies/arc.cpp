// ARC (Megiddo and Modha, FAST'03, Fig. 4). T1 holds blocks referenced once since they were stored, T2
// blocks referenced again; B1 and B2 remember blocks recently evicted from each. A block about to be stored
// that is found in B1 means T1 was too small: the target size p of T1 grows by δ1 = 1 if |B1| >= |B2|, else
// |B2| / |B1| (a real number, capped at c); found in B2, p shrinks by δ2, the mirror image (floored at 0).
// The adaptation comes first (prepare_insert), so the victim is chosen with the new p, as the paper's
// REPLACE(x, p) is: T1's LRU block while |T1| exceeds p, or equals it when the block comes from B2, else
// T2's. Ghost lists are trimmed to |T1| + |B1| <= c and |T1| + |T2| + |B1| + |B2| <= 2c after every
// insertion and eviction, which drops the same ghosts as the paper's case IV (held blocks count as
// resident). The paper's "delete T1's LRU page" when T1 alone fills the cache is the same eviction
// followed by that trim.
#include <algorithm>

#include "sim/cache/eviction_policy.h"

namespace kvtier {
namespace {

class ArcPolicy final : public EvictionPolicy {
 public:
  void set_capacity(int64_t blocks) override {
    capacity_ = blocks;
    target_t1_ = std::min(target_t1_, static_cast<double>(capacity_));
  }
  void prepare_insert(uint32_t slot) override {
    grow(slot);
    adapt(slot);
  }
  void insert(uint32_t slot) override {
    grow(slot);
    adapt(slot);
    arriving_from_b2_ = false;
    switch (where_[slot]) {
      case kB1Counted:
        lists_.unlink(b1_, slot);
        place(slot, kT2);
        break;
      case kB2Counted:
        lists_.unlink(b2_, slot);
        place(slot, kT2);
        break;
      default:
        place(slot, kT1);
        break;
    }
    trim_ghosts();
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
    double t1 = static_cast<double>(t1_.size + held_t1_);
    bool replace_t1 = t1 > target_t1_ || (arriving_from_b2_ && t1 == target_t1_);
    if (t1_.size > 0 && (replace_t1 || t2_.size == 0)) return t1_.tail;
    return t2_.tail;
  }

 private:
  // kB1Counted / kB2Counted: a ghost whose return has already moved p.
  enum Where : uint8_t { kNone, kT1, kT2, kHeldT1, kHeldT2, kB1, kB2, kB1Counted, kB2Counted };

  void grow(uint32_t slot) { cover_slot(where_, slot, kNone); }
  // Fig. 4, cases II and III: a ghost about to be stored moves p once.
  void adapt(uint32_t slot) {
    double b1 = static_cast<double>(b1_.size);
    double b2 = static_cast<double>(b2_.size);
    if (where_[slot] == kB1) {
      target_t1_ = std::min(target_t1_ + (b1 >= b2 ? 1.0 : b2 / b1), static_cast<double>(capacity_));
      where_[slot] = kB1Counted;
    } else if (where_[slot] == kB2) {
      target_t1_ = std::max(target_t1_ - (b2 >= b1 ? 1.0 : b1 / b2), 0.0);
      where_[slot] = kB2Counted;
      arriving_from_b2_ = true;
    }
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
  double target_t1_ = 0.0;         // p in the paper
  bool arriving_from_b2_ = false;  // a block announced from B2 awaits insertion (REPLACE's tie rule)
  std::vector<uint8_t> where_ = slot_array<uint8_t>();
};

}  // namespace

std::unique_ptr<EvictionPolicy> make_arc_policy() {
  return std::make_unique<ArcPolicy>();
}

}  // namespace kvtier
