// The tiered prefix cache: which KV blocks are cached in which tier, under what policy.
//
// A request's blocks form a chain (Request::block_ids: an id names its block and everything before it).
// A prefix hit is the leading run of blocks cached in any tier; the first miss ends it. The serving
// engine drives the cache with four calls:
//   lookup(ids)       the leading run and the fastest tier holding each of its blocks (no side effects);
//   admit(ids, out)   a request starts running: all its blocks end up in tier 0 and are pinned there.
//                     Hits in lower tiers are promoted, the rest placed (computed by prefill), and room is
//                     made by evicting unpinned blocks, which are demoted or dropped by the tiers' rules.
//                     If tier 0 cannot hold the request next to the blocks already pinned, admission fails
//                     and nothing changes;
//   release(adm)      the request ends: its blocks are unpinned and stay cached, released last block first
//                     so that under LRU a chain's tail is evicted before its head (per tier,
//                     recency_order: last_block_most_recent releases them in request order instead);
//   set_capacity(t)   a tier's usable capacity changes at run time (the engine shrinks HBM's cache area as
//                     decode KV grows), evicting as needed.
// Every movement is a CacheEvent (cache_event.h) with bytes in each tier's layout. Pinned blocks are never
// evicted from any tier. The fast hit-rate mode is admit followed at once by release, request by request.
//
// Memory grows with the number of distinct blocks ever seen (about 40 bytes each, plus a few per tier),
// since blocks keep their history (reference counts, ghost entries) after they leave.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "sim/cache/cache_event.h"
#include "sim/cache/eviction_policy.h"
#include "sim/cache/tier_spec.h"
#include "sim/core/dense_id_index.h"
#include "sim/core/huge_pages.h"

namespace kvtier {

struct PrefixHit {
  int64_t hit_blocks = 0;                   // length of the leading run of cached blocks
  std::vector<int64_t> hit_blocks_by_tier;  // of those, how many the fastest holding tier is t
  std::vector<int> tier_of_block;           // for each block of the run, the fastest tier holding it
};

// The result of admit(): what hit and where, and the handle release() needs.
struct Admission {
  bool admitted = false;
  // The blocks of the request that no running request pins: what it pins anew in tier 0. Set whether or
  // not it was admitted (refused: they would not fit beside the pinned blocks).
  int64_t new_pins = 0;
  PrefixHit prefix;
  std::vector<uint32_t> slots;  // the request's distinct blocks in chain order (internal handle)
};

class TieredCache {
 public:
  // REQUIRES: 1 to 32 tiers, all with the same block_tokens.
  explicit TieredCache(std::vector<TierSpec> tiers);

  // Events go to `sink` (not owned; null for none) as well as into traffic().
  void set_event_sink(CacheEventSink* sink) { sink_ = sink; }

  PrefixHit lookup(std::span<const uint64_t> block_ids) const;
  // Returns out.admitted. `out` is overwritten (its buffers are reused, so a replay allocates nothing).
  bool admit(std::span<const uint64_t> block_ids, Admission& out);
  // admit() in two halves, for a caller that may try one request many times (a serving engine whose
  // queue head waits for room): intern() puts the request's blocks in the cache's table once (blocks
  // first seen are added; `chain` gets each block's slot, an internal handle valid for the cache's life),
  // admit_chain() admits that chain. admit(ids, out) is intern() then admit_chain().
  void intern(std::span<const uint64_t> block_ids, std::vector<uint32_t>& chain);
  bool admit_chain(std::span<const uint32_t> chain, Admission& out);
  // REQUIRES: `admission` came from a successful admit() and was not released yet.
  void release(Admission& admission);
  // Returns false, changing nothing, when the tier's pinned blocks would not fit in `bytes`.
  bool set_capacity(int tier, int64_t bytes);
  // Changes whenever an admission that failed could now succeed: a release, or tier 0 growing. Nothing
  // else can make it succeed: admitting others and shrinking tier 0 leave no more room for the rest.
  uint64_t room_generation() const { return room_generation_; }

  int tier_count() const { return static_cast<int>(tiers_.size()); }
  const TierSpec& tier(int t) const { return tiers_[t].spec; }
  int64_t capacity_blocks(int t) const { return tiers_[t].capacity_blocks; }
  int64_t used_blocks(int t) const { return tiers_[t].used; }
  int64_t pinned_blocks(int t) const { return tiers_[t].pinned; }
  bool contains(int t, uint64_t block_id) const;
  const TrafficTotals& traffic() const { return traffic_; }

 private:
  struct Block {
    uint64_t id;
    uint32_t parent;       // the previous block of the chain where it was first seen
    uint32_t first_child;  // children are linked through next_sibling (for prefix-aware drops)
    uint32_t next_sibling;
    uint32_t tier_mask = 0;  // bit t: cached in tier t
    uint32_t pins = 0;       // running requests using it
    uint32_t seen = 0;       // requests that referenced it (admission filters)
    uint32_t mark = 0;       // admit()'s de-duplication stamp
    bool transient = false;  // discard from tier 0 on release (promoted from a promote_on_hit: false tier)
  };
  struct Tier {
    TierSpec spec;
    int64_t block_bytes = 0;
    int64_t capacity_blocks = 0;
    int64_t used = 0;
    int64_t pinned = 0;
    std::unique_ptr<EvictionPolicy> policy;
    // Prefix-aware: unpinned children of the slot cached in this tier.
    std::vector<uint32_t> children = slot_array<uint32_t>();
    // What the policy was told: 1 = held out of victim()'s reach.
    std::vector<uint8_t> held = slot_array<uint8_t>();
  };

  uint32_t intern_block(uint64_t id, uint32_t parent);
  bool in_tier(int t, uint32_t slot) const { return blocks_[slot].tier_mask >> t & 1u; }
  void emit(CacheEventKind kind, uint32_t slot, int from, int to);
  bool must_hold(const Tier& tier, uint32_t slot) const;
  void sync_hold(int t, uint32_t slot);
  void count_child(int t, uint32_t slot, int delta);
  void add_to_tier(int t, uint32_t slot);
  void remove_from_tier(int t, uint32_t slot);
  // Tiers in `defer_release_mask` are not told of an unpinning here: release() does it in request order.
  void set_pins(uint32_t slot, uint32_t pins, uint32_t defer_release_mask = 0);
  bool make_room(int t, int64_t blocks);
  bool make_room_for(int t, uint32_t slot);  // announces `slot` to the policy, then room for one block
  bool evict_one(int t);
  int demotion_target(int from, uint32_t slot);
  bool parent_cached(uint32_t slot) const;
  // Copies the block to the write-through tiers right below `from` (most configurations have none).
  void write_through(int from, uint32_t slot) {
    if (from + 1 < tier_count() && tiers_[from + 1].spec.write == WriteMode::kThrough)
      copy_through(from, slot);
  }
  void copy_through(int from, uint32_t slot);
  void bring_to_tier0(uint32_t slot, bool leading_hit);
  void drop_orphans(uint32_t slot);
  void fill_prefix(std::span<const uint32_t> slots, PrefixHit& out) const;

  std::vector<Tier> tiers_;
  DenseIdIndex index_;  // block id -> slot
  // On huge pages: 40 bytes a distinct block touch hundreds of 4 KiB pages, each a fault (huge_pages.h).
  std::vector<Block, HugePageAllocator<Block>> blocks_ = slot_array<Block, HugePageAllocator<Block>>();
  std::vector<uint32_t> chain_;         // admit(): the request's slots, duplicates included
  std::vector<uint8_t> leading_;        // admit(): per distinct slot, whether it is in the leading run
  std::vector<uint32_t> orphan_stack_;  // drop_orphans()
  uint32_t epoch_ = 0;
  uint64_t room_generation_ = 0;
  bool any_prefix_aware_ = false;
  uint32_t released_in_request_order_ = 0;  // bit t: tier t's recency_order is last_block_most_recent
  TrafficTotals traffic_;
  CacheEventSink* sink_ = nullptr;
};

}  // namespace kvtier
