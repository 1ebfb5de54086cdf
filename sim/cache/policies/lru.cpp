// LRU: one list, most recently referenced or released at the head, victims from the tail.
#include "sim/cache/eviction_policy.h"

namespace kvtier {
namespace {

class LruPolicy final : public EvictionPolicy {
 public:
  void set_capacity(int64_t) override {}
  void insert(uint32_t slot) override {
    mark(slot, kEvictable);
    lists_.push_front(order_, slot);
  }
  void hit(uint32_t slot) override {
    if (state_[slot] == kEvictable) lists_.move_to_front(order_, slot);
  }
  void hold(uint32_t slot) override {
    lists_.unlink(order_, slot);
    state_[slot] = kHeld;
  }
  void unhold(uint32_t slot) override { insert(slot); }
  void erase(uint32_t slot) override {
    if (state_[slot] == kEvictable) lists_.unlink(order_, slot);
    state_[slot] = kAbsent;
  }
  uint32_t victim() override { return order_.tail; }

 private:
  enum State : uint8_t { kAbsent, kEvictable, kHeld };
  void mark(uint32_t slot, State state) {
    cover_slot(state_, slot, kAbsent);
    state_[slot] = state;
  }

  SlotLists lists_;
  SlotLists::List order_;
  std::vector<uint8_t> state_ = slot_array<uint8_t>();
};

}  // namespace

std::unique_ptr<EvictionPolicy> make_lru_policy() {
  return std::make_unique<LruPolicy>();
}

}  // namespace kvtier
