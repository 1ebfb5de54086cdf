// LRU: one list, most recently referenced or released at the head, victims from the tail.
#include "sim/cache/eviction_policy.h"

namespace kvtier {
namespace {

class LruPolicy final : public EvictionPolicy {
 public:
  void set_capacity(int64_t) override {}
  void insert(uint32_t slot) override { lists_.push_front(order_, slot); }
  void hit(uint32_t slot) override {
    if (lists_.in_only_list(order_, slot)) lists_.move_to_front(order_, slot);  // evictable, not held
  }
  void hold(uint32_t slot) override { lists_.unlink(order_, slot); }
  void unhold(uint32_t slot) override { insert(slot); }
  void erase(uint32_t slot) override {
    if (lists_.in_only_list(order_, slot)) lists_.unlink(order_, slot);
  }
  uint32_t victim() override { return order_.tail; }

 private:
  // The evictable blocks; a held block is in the cache but out of the list.
  SlotLists lists_;
  SlotLists::List order_;
};

}  // namespace

std::unique_ptr<EvictionPolicy> make_lru_policy() {
  return std::make_unique<LruPolicy>();
}

}  // namespace kvtier
