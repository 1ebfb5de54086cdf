// Eviction policies: which evictable block of one tier goes next.
//
// A policy sees the blocks of one tier by slot and keeps its own order (recency, frequency, queues,
// ghost history). The tier tells it what happens: a block is stored (insert), referenced again (hit),
// held out of reach while a running request pins it or, with prefix-aware eviction, while a child is
// cached below it (hold/unhold), and removed (erase). victim() names the block to evict next among those
// not held; it never removes anything itself, so the tier can emit the event and then call erase().
//
// Holding instead of skipping keeps every operation O(1) (LFU: O(log distinct frequencies)) however many
// blocks running requests pin. A held block keeps its history and re-enters where a fresh reference would
// put it: LRU at the most-recent end, LFU in its frequency bucket, ARC in T1 or T2, S3-FIFO at the head of
// the queue it was in.
//
// Policies: LRU; LFU (ties broken by recency, frequency forgotten on eviction); ARC (Megiddo and Modha,
// FAST'03, Fig. 4: recency list T1, frequency list T2, ghost lists B1/B2 adapting the real-valued target
// size p of T1 before the victim is chosen); S3-FIFO (Yang et al., SOSP'23, Algorithm 1: a small FIFO of
// 10 % of capacity, a main FIFO with a frequency capped at 3 and reinsertion, a ghost FIFO that sends
// returning blocks straight to main). On a sequence of single blocks, ARC and S3-FIFO make the choices
// of their papers' pseudocode exactly (policy_reference_test.cpp holds them to literal transcriptions).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sim/cache/slot_lists.h"

namespace kvtier {

enum class PolicyKind { kLru, kLfu, kArc, kS3Fifo };

// S3-FIFO's Algorithm 1 moves a block leaving the small queue to the main queue when its frequency
// exceeds 1, that is, when it was referenced at least twice after it was stored (libCacheSim's
// move-to-main-threshold=2 means the same).
inline constexpr int kS3FifoPaperMoveToMainThreshold = 2;

// Parameters of the policies that have them; the others ignore them.
struct PolicyOptions {
  // S3-FIFO: references in the small queue (1 to 3, the frequency cap) that move a block to main.
  int move_to_main_threshold = kS3FifoPaperMoveToMainThreshold;
};

// "lru", "lfu", "arc", "s3fifo"
std::string policy_name(PolicyKind kind);
std::vector<std::string> policy_names();
// Returns false when `name` is not a policy.
bool parse_policy_name(const std::string& name, PolicyKind& out);

class EvictionPolicy {
 public:
  virtual ~EvictionPolicy() = default;

  // The tier's capacity in blocks; ARC and S3-FIFO size their lists from it.
  virtual void set_capacity(int64_t blocks) = 0;
  // REQUIRES: `slot` is not in the tier. Announces that it will be inserted once room is made, so that
  // the victims chosen for it can depend on it: ARC adapts p to a ghost hit here, before it replaces.
  virtual void prepare_insert(uint32_t /*slot*/) {}
  // REQUIRES: `slot` is not in the tier. It becomes resident and evictable.
  virtual void insert(uint32_t slot) = 0;
  // REQUIRES: `slot` is resident (held or not). Records a reference.
  virtual void hit(uint32_t slot) = 0;
  // REQUIRES: resident and evictable. Takes it out of victim()'s reach, keeping its history.
  virtual void hold(uint32_t slot) = 0;
  // REQUIRES: resident and held. Makes it evictable again.
  virtual void unhold(uint32_t slot) = 0;
  // REQUIRES: resident (held or not). It leaves the tier; ghost-keeping policies remember it.
  virtual void erase(uint32_t slot) = 0;
  // The evictable block to evict next, or kNoSlot when none. May reorder internal queues (S3-FIFO moves
  // small-queue blocks to main, ARC nothing), never removes.
  virtual uint32_t victim() = 0;
  // True while the policy is part-way through an eviction step that removes more than one block, so the
  // tier should take victims even though it has room: S3-FIFO, when moving a block to main overfills
  // it, evicts from main and then goes on evicting from the small queue.
  virtual bool eviction_pending() const { return false; }
};

std::unique_ptr<EvictionPolicy> make_policy(PolicyKind kind, const PolicyOptions& options = {});

}  // namespace kvtier
