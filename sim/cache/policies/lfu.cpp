// LFU: blocks bucketed by reference count, least frequent bucket first, least recent within a bucket.
// A block's count starts at 1 when it is stored and is forgotten when it leaves the tier.
#include <map>

#include "sim/cache/eviction_policy.h"

namespace kvtier {
namespace {

class LfuPolicy final : public EvictionPolicy {
 public:
  void set_capacity(int64_t) override {}
  void insert(uint32_t slot) override {
    grow(slot);
    frequency_[slot] = 1;
    link(slot);
  }
  void hit(uint32_t slot) override {
    if (evictable_[slot]) {
      unlink(slot);
      ++frequency_[slot];
      link(slot);
    } else {
      ++frequency_[slot];
    }
  }
  void hold(uint32_t slot) override { unlink(slot); }
  void unhold(uint32_t slot) override { link(slot); }
  void erase(uint32_t slot) override {
    if (evictable_[slot]) unlink(slot);
    frequency_[slot] = 0;
  }
  uint32_t victim() override { return buckets_.empty() ? kNoSlot : buckets_.begin()->second.tail; }

 private:
  void grow(uint32_t slot) {
    cover_slot(frequency_, slot, uint32_t{0});
    cover_slot(evictable_, slot, uint8_t{0});
  }
  void link(uint32_t slot) {
    lists_.push_front(buckets_[frequency_[slot]], slot);
    evictable_[slot] = 1;
  }
  void unlink(uint32_t slot) {
    auto bucket = buckets_.find(frequency_[slot]);
    lists_.unlink(bucket->second, slot);
    if (bucket->second.size == 0) buckets_.erase(bucket);
    evictable_[slot] = 0;
  }

  SlotLists lists_;
  std::map<uint32_t, SlotLists::List> buckets_;  // frequency -> blocks, most recent first
  std::vector<uint32_t> frequency_ = slot_array<uint32_t>();
  std::vector<uint8_t> evictable_ = slot_array<uint8_t>();
};

}  // namespace

std::unique_ptr<EvictionPolicy> make_lfu_policy() {
  return std::make_unique<LfuPolicy>();
}

}  // namespace kvtier
