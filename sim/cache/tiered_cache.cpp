#include "sim/cache/tiered_cache.h"

#include <bit>
#include <stdexcept>
#include <string>

namespace kvtier {

const char* event_kind_name(CacheEventKind kind) {
  switch (kind) {
    case CacheEventKind::kPlace:
      return "place";
    case CacheEventKind::kPromote:
      return "promote";
    case CacheEventKind::kWriteThrough:
      return "write_through";
    case CacheEventKind::kDemote:
      return "demote";
    case CacheEventKind::kDrop:
      return "drop";
  }
  return "?";
}

TieredCache::TieredCache(std::vector<TierSpec> specs) : traffic_(static_cast<int>(specs.size())) {
  if (specs.empty() || specs.size() > 32) throw std::invalid_argument("a cache has 1 to 32 tiers");
  for (TierSpec& spec : specs) {
    if (spec.block_tokens != specs[0].block_tokens || spec.bytes_per_block() <= 0) {
      throw std::invalid_argument("tier " + spec.name + ": every tier needs the same positive block size");
    }
    Tier tier;
    tier.block_bytes = spec.bytes_per_block();
    tier.capacity_blocks = spec.capacity_blocks();
    tier.policy = make_policy(spec.policy, spec.policy_options);
    tier.policy->set_capacity(tier.capacity_blocks);
    any_prefix_aware_ = any_prefix_aware_ || spec.prefix_aware;
    if (spec.recency_order == RecencyOrder::kLastBlockMostRecent) {
      released_in_request_order_ |= 1u << tiers_.size();
    }
    tier.spec = std::move(spec);
    tiers_.push_back(std::move(tier));
  }
}

uint32_t TieredCache::intern_block(uint64_t id, uint32_t parent) {
  const auto slot = static_cast<uint32_t>(blocks_.size());
  if (uint32_t known = index_.insert(id, slot); known != slot) return known;
  Block block{.id = id, .parent = parent, .first_child = kNoSlot, .next_sibling = kNoSlot};
  if (parent != kNoSlot) {
    block.next_sibling = blocks_[parent].first_child;
    blocks_[parent].first_child = slot;
  }
  blocks_.push_back(block);
  for (Tier& tier : tiers_) {
    cover_slot(tier.held, slot, uint8_t{0});
    if (tier.spec.prefix_aware) cover_slot(tier.children, slot, uint32_t{0});
  }
  return slot;
}

void TieredCache::emit(CacheEventKind kind, uint32_t slot, int from, int to) {
  const int64_t from_bytes = from >= 0 ? tiers_[from].block_bytes : 0;
  const int64_t to_bytes = to >= 0 ? tiers_[to].block_bytes : 0;
  traffic_.add(kind, from, to, from_bytes, to_bytes);
  if (sink_ != nullptr) sink_->on_event({kind, blocks_[slot].id, from, to, from_bytes, to_bytes});
}

// A block may not be a victim while pinned, nor (prefix-aware) while an unpinned child is cached in the
// same tier, so that leaves go first.
bool TieredCache::must_hold(const Tier& tier, uint32_t slot) const {
  return blocks_[slot].pins > 0 || (tier.spec.prefix_aware && tier.children[slot] > 0);
}

// Tells the policy whether the block may be a victim.
void TieredCache::sync_hold(int t, uint32_t slot) {
  if (!in_tier(t, slot)) return;
  Tier& tier = tiers_[t];
  bool hold = must_hold(tier, slot);
  if (hold == static_cast<bool>(tier.held[slot])) return;
  if (hold) {
    tier.policy->hold(slot);
  } else {
    tier.policy->unhold(slot);
  }
  tier.held[slot] = hold;
}

void TieredCache::add_to_tier(int t, uint32_t slot) {
  Tier& tier = tiers_[t];
  Block& block = blocks_[slot];
  block.tier_mask |= 1u << t;
  ++tier.used;
  if (block.pins > 0) ++tier.pinned;
  tier.policy->insert(slot);  // evictable, until held below
  if (block.pins == 0) count_child(t, slot, +1);
  const bool hold = must_hold(tier, slot);
  if (hold) tier.policy->hold(slot);
  tier.held[slot] = hold;
}

// Prefix-aware tiers hold a block while an unpinned child is cached in the same tier. Pinned children do
// not count: with consistent chains their parents are pinned too, and with inconsistent ones (a block
// first seen after another predecessor) a hold could otherwise outlive every evictable leaf.
void TieredCache::count_child(int t, uint32_t slot, int delta) {
  Tier& tier = tiers_[t];
  uint32_t parent = blocks_[slot].parent;
  if (!tier.spec.prefix_aware || parent == kNoSlot) return;
  tier.children[parent] += delta;
  sync_hold(t, parent);
}

void TieredCache::remove_from_tier(int t, uint32_t slot) {
  Tier& tier = tiers_[t];
  Block& block = blocks_[slot];
  block.tier_mask &= ~(1u << t);
  --tier.used;
  if (block.pins > 0) --tier.pinned;
  tier.policy->erase(slot);
  tier.held[slot] = 0;
  if (block.pins == 0) count_child(t, slot, -1);
}

void TieredCache::set_pins(uint32_t slot, uint32_t pins, uint32_t defer_release_mask) {
  Block& block = blocks_[slot];
  bool was_pinned = block.pins > 0;
  block.pins = pins;
  if (was_pinned == (pins > 0)) return;
  for (uint32_t mask = block.tier_mask; mask != 0; mask &= mask - 1) {
    int t = std::countr_zero(mask);
    tiers_[t].pinned += pins > 0 ? 1 : -1;
    count_child(t, slot, pins > 0 ? -1 : +1);
    if (pins > 0 || !(defer_release_mask >> t & 1u)) sync_hold(t, slot);
  }
}

bool TieredCache::contains(int t, uint64_t block_id) const {
  const uint32_t slot = index_.find(block_id);
  return slot != DenseIdIndex::kAbsent && in_tier(t, slot);
}

void TieredCache::fill_prefix(std::span<const uint32_t> slots, PrefixHit& out) const {
  out.hit_blocks = 0;
  out.hit_blocks_by_tier.assign(tiers_.size(), 0);
  out.tier_of_block.clear();
  for (uint32_t slot : slots) {
    uint32_t mask = slot == kNoSlot ? 0 : blocks_[slot].tier_mask;
    if (mask == 0) break;
    int t = std::countr_zero(mask);
    ++out.hit_blocks;
    ++out.hit_blocks_by_tier[t];
    out.tier_of_block.push_back(t);
  }
}

PrefixHit TieredCache::lookup(std::span<const uint64_t> block_ids) const {
  std::vector<uint32_t> slots;
  for (uint64_t id : block_ids) {
    const uint32_t slot = index_.find(id);
    if (slot == DenseIdIndex::kAbsent) break;
    slots.push_back(slot);
  }
  PrefixHit hit;
  fill_prefix(slots, hit);
  return hit;
}

bool TieredCache::admit(std::span<const uint64_t> block_ids, Admission& out) {
  intern(block_ids, chain_);
  return admit_chain(chain_, out);
}

void TieredCache::intern(std::span<const uint64_t> block_ids, std::vector<uint32_t>& chain) {
  chain.clear();
  chain.reserve(block_ids.size());
  uint32_t parent = kNoSlot;
  for (uint64_t id : block_ids) {
    parent = intern_block(id, parent);
    chain.push_back(parent);
  }
}

bool TieredCache::admit_chain(std::span<const uint32_t> chain, Admission& out) {
  out.admitted = false;
  out.slots.clear();
  out.slots.reserve(chain.size());
  fill_prefix(chain, out.prefix);

  if (++epoch_ == 0) {
    for (Block& block : blocks_) block.mark = 0;
    epoch_ = 1;
  }
  leading_.clear();
  int64_t new_pins = 0;
  int64_t missing = 0;
  for (size_t position = 0; position < chain.size(); ++position) {
    Block& block = blocks_[chain[position]];
    if (block.mark == epoch_) continue;
    block.mark = epoch_;
    out.slots.push_back(chain[position]);
    leading_.push_back(static_cast<int64_t>(position) < out.prefix.hit_blocks);
    new_pins += block.pins == 0;
    missing += !in_tier(0, chain[position]);
  }
  out.new_pins = new_pins;
  if (tiers_[0].pinned + new_pins > tiers_[0].capacity_blocks) {
    out.slots.clear();
    return false;
  }

  for (uint32_t slot : out.slots) {
    ++blocks_[slot].seen;
    if (in_tier(0, slot)) {
      tiers_[0].policy->hit(slot);
    } else {
      tiers_[0].policy->prepare_insert(slot);
    }
    set_pins(slot, blocks_[slot].pins + 1);
  }
  if (!make_room(0, missing)) {
    throw std::logic_error(
        "tier 0 found no victim although its pinned blocks fit: inconsistent block chains");
  }
  for (size_t i = 0; i < out.slots.size(); ++i) {
    if (!in_tier(0, out.slots[i])) bring_to_tier0(out.slots[i], leading_[i]);
  }
  out.admitted = true;
  return true;
}

// A leading-run hit is promoted from the fastest tier holding it; any other block not in tier 0 is
// computed by prefill. Either way exclusive tiers give up their copy.
void TieredCache::bring_to_tier0(uint32_t slot, bool leading_hit) {
  Block& block = blocks_[slot];
  int source = leading_hit ? std::countr_zero(block.tier_mask) : -1;
  emit(source > 0 ? CacheEventKind::kPromote : CacheEventKind::kPlace, slot, source, 0);
  add_to_tier(0, slot);
  for (int t = 1; t < tier_count(); ++t) {
    if (!in_tier(t, slot)) continue;
    const TierSpec& spec = tiers_[t].spec;
    if (spec.placement == Placement::kExclusive) {
      remove_from_tier(t, slot);
      if (t != source) emit(CacheEventKind::kDrop, slot, t, -1);
    } else if (t == source) {
      tiers_[t].policy->hit(slot);
      if (!spec.promote_on_hit) block.transient = true;
    }
  }
  write_through(0, slot);
}

// Blocks are unpinned last block first, so in each tier's policy the request's first block becomes the
// most recent; tiers with recency_order: last_block_most_recent get theirs back afterwards, first block
// first. (Only the order of giving blocks back to the policies differs; holds and drops do not.)
void TieredCache::release(Admission& admission) {
  for (auto it = admission.slots.rbegin(); it != admission.slots.rend(); ++it) {
    uint32_t slot = *it;
    Block& block = blocks_[slot];
    set_pins(slot, block.pins - 1, released_in_request_order_);
    if (block.pins == 0 && block.transient) {
      block.transient = false;
      remove_from_tier(0, slot);
      emit(CacheEventKind::kDrop, slot, 0, -1);
    }
  }
  if (released_in_request_order_ != 0) {
    for (uint32_t slot : admission.slots) {
      uint32_t deferred = blocks_[slot].tier_mask & released_in_request_order_;
      for (; deferred != 0; deferred &= deferred - 1) sync_hold(std::countr_zero(deferred), slot);
    }
  }
  admission.admitted = false;
  admission.slots.clear();
  ++room_generation_;
}

bool TieredCache::set_capacity(int t, int64_t bytes) {
  Tier& tier = tiers_[t];
  int64_t blocks = bytes / tier.block_bytes;
  if (blocks < tier.pinned) return false;
  if (t == 0 && blocks > tier.capacity_blocks) ++room_generation_;
  tier.capacity_blocks = blocks;
  tier.spec.capacity_bytes = bytes;
  tier.policy->set_capacity(blocks);
  if (!make_room(t, 0)) {
    throw std::logic_error("tier " + tier.spec.name + " found no victim although its pinned blocks fit");
  }
  return true;
}

}  // namespace kvtier
