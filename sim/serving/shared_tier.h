// A tier below an instance's own tiers and shared with other instances: a cluster's KV pool
// (sim/cluster/shared_pool.h). The scheduler looks up how much of a request's prefix it holds past the
// instance's own hits and loads that part from it instead of recomputing it, and writes each block the
// instance places in HBM through to it. Its blocks are never pinned: a block evicted while a load reads
// it has been read.
#pragma once

#include <cstdint>
#include <span>

#include "sim/cache/tier_spec.h"

namespace kvtier {

class SharedTier {
 public:
  virtual ~SharedTier() = default;

  virtual const TierSpec& spec() const = 0;
  // How many of `block_ids`, from the first, the tier holds; each of them counts as referenced.
  virtual int64_t leading_run(std::span<const uint64_t> block_ids) = 0;
  // Stores a block the tier lacks, evicting as its policy chooses, and returns true; false when it holds
  // the block already.
  virtual bool store(uint64_t block) = 0;
};

}  // namespace kvtier
