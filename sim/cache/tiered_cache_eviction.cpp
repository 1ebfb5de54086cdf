// The eviction side of TieredCache: making room, demoting or dropping victims, write-through copies, and
// prefix-aware removal of blocks whose parent left the hierarchy.
#include "sim/cache/tiered_cache.h"

namespace kvtier {

// Evicts until `blocks` more fit, and on while the policy has an eviction step under way.
bool TieredCache::make_room(int t, int64_t blocks) {
  Tier& tier = tiers_[t];
  if (blocks > tier.capacity_blocks) return false;
  while (true) {
    bool short_of_room = tier.used + blocks > tier.capacity_blocks;
    if (!short_of_room && !tier.policy->eviction_pending()) return true;
    if (!evict_one(t)) return !short_of_room;
  }
}

bool TieredCache::make_room_for(int t, uint32_t slot) {
  tiers_[t].policy->prepare_insert(slot);
  return make_room(t, 1);
}

// Evicts the policy's victim. A block still cached elsewhere is dropped from this tier (its copy is
// enough); otherwise it is demoted to the first lower spill tier that admits it, or dropped.
bool TieredCache::evict_one(int t) {
  uint32_t victim = tiers_[t].policy->victim();
  if (victim == kNoSlot) return false;
  remove_from_tier(t, victim);
  if (blocks_[victim].tier_mask != 0) {
    emit(CacheEventKind::kDrop, victim, t, -1);
    return true;
  }
  int target = demotion_target(t, victim);
  if (target < 0) {
    emit(CacheEventKind::kDrop, victim, t, -1);
    drop_orphans(victim);
    return true;
  }
  add_to_tier(target, victim);
  emit(CacheEventKind::kDemote, victim, t, target);
  write_through(target, victim);
  return true;
}

int TieredCache::demotion_target(int from, uint32_t slot) {
  for (int k = from + 1; k < tier_count(); ++k) {
    const TierSpec& spec = tiers_[k].spec;
    if (spec.write != WriteMode::kSpill || blocks_[slot].seen < spec.admit_after) continue;
    if (spec.prefix_aware && !parent_cached(slot)) continue;
    // Making room may drop the parent (prefix-aware cascades), so check again after.
    if (make_room_for(k, slot) && !(spec.prefix_aware && !parent_cached(slot))) return k;
  }
  return -1;
}

bool TieredCache::parent_cached(uint32_t slot) const {
  uint32_t parent = blocks_[slot].parent;
  return parent == kNoSlot || blocks_[parent].tier_mask != 0;
}

void TieredCache::copy_through(int from, uint32_t slot) {
  for (int k = from + 1; k < tier_count() && tiers_[k].spec.write == WriteMode::kThrough; ++k) {
    if (in_tier(k, slot) || blocks_[slot].seen < tiers_[k].spec.admit_after) continue;
    if (!make_room_for(k, slot) || !in_tier(from, slot)) continue;
    add_to_tier(k, slot);
    emit(CacheEventKind::kWriteThrough, slot, from, k);
  }
}

// A block left the hierarchy: its descendants can never hit again, so prefix-aware tiers drop them.
void TieredCache::drop_orphans(uint32_t slot) {
  if (!any_prefix_aware_) return;
  orphan_stack_.assign(1, slot);
  while (!orphan_stack_.empty()) {
    uint32_t parent = orphan_stack_.back();
    orphan_stack_.pop_back();
    for (uint32_t child = blocks_[parent].first_child; child != kNoSlot;
         child = blocks_[child].next_sibling) {
      if (blocks_[child].tier_mask == 0 || blocks_[child].pins > 0) continue;
      for (int t = 0; t < tier_count(); ++t) {
        if (tiers_[t].spec.prefix_aware && in_tier(t, child)) {
          remove_from_tier(t, child);
          emit(CacheEventKind::kDrop, child, t, -1);
        }
      }
      if (blocks_[child].tier_mask == 0) orphan_stack_.push_back(child);
    }
  }
}

}  // namespace kvtier
