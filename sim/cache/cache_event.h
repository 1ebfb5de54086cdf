// What the tiered cache reports: every block that is placed, promoted, copied, demoted or dropped.
//
// The serving engine turns events into transfers (a promotion from DRAM is a host-to-device copy of
// `from_bytes` read and `to_bytes` written: a 4-bit DRAM block grows back to bf16 in HBM), and the tests
// use them to check conservation. Bytes are in each tier's own layout. Tier -1 stands for "outside the
// cache": a placed block was computed by prefill, a dropped block is gone from that tier with no copy made.
#pragma once

#include <cstdint>
#include <vector>

namespace kvtier {

enum class CacheEventKind {
  kPlace,         // a missed block computed by prefill and stored in tier 0 (from -1)
  kPromote,       // a hit in a lower tier loaded into tier 0 (moved if exclusive, copied if inclusive)
  kWriteThrough,  // a copy written to a write-through tier when the tier above stored the block
  kDemote,        // evicted from a tier and written to a lower one
  kDrop,          // removed from a tier without a copy being written (to -1)
};
inline constexpr int kCacheEventKinds = 5;

const char* event_kind_name(CacheEventKind kind);  // "place", "promote", "write_through", "demote", "drop"

struct CacheEvent {
  CacheEventKind kind;
  uint64_t block;
  int from_tier;       // -1 for kPlace
  int to_tier;         // -1 for kDrop
  int64_t from_bytes;  // in the source tier's layout, 0 for kPlace
  int64_t to_bytes;    // in the destination tier's layout, 0 for kDrop
};

// Receives events as they happen, in order. The cache also keeps totals (TrafficTotals), so a sink is
// only needed to see individual blocks.
class CacheEventSink {
 public:
  virtual ~CacheEventSink() = default;
  virtual void on_event(const CacheEvent& event) = 0;
};

// Totals of events by kind and (from, to) tier pair.
class TrafficTotals {
 public:
  struct Flow {
    int64_t blocks = 0;
    int64_t from_bytes = 0;
    int64_t to_bytes = 0;
  };

  explicit TrafficTotals(int tiers = 0)
      : tiers_(tiers), flows_(kCacheEventKinds * (tiers + 1) * (tiers + 1)) {}

  void add(CacheEventKind kind, int from_tier, int to_tier, int64_t from_bytes, int64_t to_bytes) {
    Flow& f = flows_[index(kind, from_tier, to_tier)];
    ++blocks_;
    ++f.blocks;
    f.from_bytes += from_bytes;
    f.to_bytes += to_bytes;
  }
  // Adds another cache's totals (of as many tiers).
  void add(const TrafficTotals& other) {
    blocks_ += other.blocks_;
    for (size_t i = 0; i < flows_.size(); ++i) {
      flows_[i].blocks += other.flows_[i].blocks;
      flows_[i].from_bytes += other.flows_[i].from_bytes;
      flows_[i].to_bytes += other.flows_[i].to_bytes;
    }
  }
  const Flow& flow(CacheEventKind kind, int from_tier, int to_tier) const {
    return flows_[index(kind, from_tier, to_tier)];
  }
  int tiers() const { return tiers_; }
  // Events of every kind, each counted once.
  int64_t blocks() const { return blocks_; }

 private:
  size_t index(CacheEventKind kind, int from, int to) const {
    return (static_cast<size_t>(kind) * (tiers_ + 1) + (from + 1)) * (tiers_ + 1) + (to + 1);
  }

  int tiers_;
  int64_t blocks_ = 0;
  std::vector<Flow> flows_;
};

}  // namespace kvtier
