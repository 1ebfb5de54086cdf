#include "tiered_store.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace kvtier::hw {
namespace {

int64_t capacity_of(const std::vector<TierSpec>& tiers, int tier) {
  return tier < static_cast<int>(tiers.size()) ? tiers[tier].capacity_blocks() : 0;
}

[[noreturn]] void bad_request(const std::string& what) {
  throw StoreError(StoreErrc::kBadRequest, "tiered store: " + what);
}

}  // namespace

TieredStore::HostPages::HostPages(const DevicePages& device, int64_t count)
    : pitch(device.host_pitch()),
      memory(device.allocate_host(std::max<uint64_t>(count, 1) * pitch)),
      slots(static_cast<uint64_t>(count)) {}

TieredStore::TieredStore(std::vector<TierSpec> tiers, DevicePages& device, std::unique_ptr<NvmeStore> nvme,
                         TieredStoreOptions options)
    : cache_((check_tiers(tiers, device, options), tiers)),
      device_(device),
      nvme_(std::move(nvme)),
      hbm_(static_cast<uint64_t>(device.page_count())),
      dram_(device, tiers.size() > 1 ? capacity_of(tiers, kDramTier) + options.spare_dram_pages : 0),
      staging_(device, options.staging_pages) {
  if ((nvme_ != nullptr) != (tiers.size() == 3)) {
    bad_request(nvme_ ? "an NVMe store was given but there is no third tier"
                      : "the third tier (NVMe) needs an NVMe store");
  }
  cache_.set_event_sink(&log_);
}

void TieredStore::check_tiers(const std::vector<TierSpec>& tiers, const DevicePages& device,
                              const TieredStoreOptions& options) {
  if (tiers.empty() || tiers.size() > 3) {
    bad_request("expected 1 to 3 tiers (HBM, DRAM, NVMe), got " + std::to_string(tiers.size()));
  }
  for (const TierSpec& tier : tiers) {
    if (static_cast<uint64_t>(tier.bytes_per_block()) != device.page_bytes()) {
      bad_request("tier " + tier.name + " stores " + std::to_string(tier.bytes_per_block()) +
                  " bytes per block but a device page holds " + std::to_string(device.page_bytes()) +
                  "; pages move unchanged (no quantization on offload), so every tier needs tier 0's layout");
    }
  }
  if (tiers[0].capacity_blocks() > device.page_count()) {
    bad_request("tier " + tiers[0].name + " holds " + std::to_string(tiers[0].capacity_blocks()) +
                " blocks but the device has " + std::to_string(device.page_count()) + " pages");
  }
  if (options.staging_pages < 1 || options.spare_dram_pages < 0) {
    bad_request("expected staging_pages >= 1 and spare_dram_pages >= 0");
  }
}

void TieredStore::throw_if_failed() const {
  if (failure_) {
    throw StoreError(failure_->code(), std::string("the tiered store stopped after a failed transfer (") +
                                           failure_->what() + ")");
  }
}

int TieredStore::resident_tier(uint64_t block) const {
  for (int t = 0; t < cache_.tier_count(); ++t) {
    if (slot_of_[t].contains(block)) return t;
  }
  return -1;
}

// Before anything moves: where each block's bytes are, the leading run of blocks held somewhere, and
// for every block whether it will come from a tier or be computed.
void TieredStore::observe_residency(std::span<const uint64_t> block_ids, StoreAdmission& out) const {
  out.hits_by_tier.assign(static_cast<size_t>(cache_.tier_count()), 0);
  out.hit_blocks = 0;
  out.source_tier.clear();
  bool leading = true;
  for (uint64_t block : block_ids) {
    const int tier = resident_tier(block);
    leading = leading && tier >= 0;
    if (leading) {
      ++out.hit_blocks;
      ++out.hits_by_tier[static_cast<size_t>(tier)];
    }
    // Past the first miss only blocks already in HBM stay; the rest are placed (computed by prefill).
    out.source_tier.push_back(leading || tier == kHbmTier ? tier : -1);
  }
}

void TieredStore::check_against_cache(const PrefixHit& prefix, const StoreAdmission& out) const {
  bool same = prefix.hit_blocks == out.hit_blocks;
  for (int64_t i = 0; same && i < prefix.hit_blocks; ++i)
    same = prefix.tier_of_block[i] == out.source_tier[i];
  if (!same) {
    throw std::logic_error("tiered store: the bytes are not where the cache model says (" +
                           std::to_string(out.hit_blocks) + " leading blocks held against the cache's " +
                           std::to_string(prefix.hit_blocks) + ")");
  }
}

void TieredStore::fill_pages(std::span<const uint64_t> block_ids, StoreAdmission& out) const {
  out.hbm_pages.clear();
  for (uint64_t block : block_ids) out.hbm_pages.push_back(static_cast<int64_t>(slot(kHbmTier, block)));
}

StoreAdmission TieredStore::admit(std::span<const uint64_t> block_ids) {
  throw_if_failed();
  StoreAdmission out;
  observe_residency(block_ids, out);
  log_.events.clear();
  if (!cache_.admit(block_ids, out.cache_admission_)) return out;
  check_against_cache(out.cache_admission_.prefix, out);
  batch_seconds_ = 0;
  for (const CacheEvent& event : log_.events) apply(event, &out);
  flush();
  fill_pages(block_ids, out);
  out.transfer_seconds = batch_seconds_;
  out.admitted = true;
  return out;
}

void TieredStore::release(StoreAdmission& admission) {
  throw_if_failed();
  for (uint64_t block : admission.placed_) awaiting_kv_.erase(block);
  log_.events.clear();
  cache_.release(admission.cache_admission_);
  batch_seconds_ = 0;
  for (const CacheEvent& event : admission.deferred_) apply(event, nullptr);
  for (const CacheEvent& event : log_.events) apply(event, nullptr);
  flush();
  admission.transfer_seconds += batch_seconds_;
  admission.admitted = false;
  admission.placed_.clear();
  admission.deferred_.clear();
}

// Outside admit() and release() no batch is pending, so every staging page is free: page 0 serves.
bool TieredStore::read_block(uint64_t block, std::span<std::byte> out) {
  if (out.size() < page_bytes()) bad_request("read_block needs a buffer of a whole page");
  const int tier = resident_tier(block);
  if (tier < 0) return false;
  std::byte* staging = staging_.page(0);
  if (tier == kHbmTier) {
    const int64_t page = static_cast<int64_t>(slot(kHbmTier, block));
    device_.offload({&page, 1}, {&staging, 1});
    device_.synchronize();
  } else if (tier == kDramTier) {
    staging = dram_.page(slot(kDramTier, block));
  } else {
    const BlockRead read{block, {staging, staging_.pitch}};
    nvme_->get({&read, 1});
  }
  std::memcpy(out.data(), staging, page_bytes());
  return true;
}

}  // namespace kvtier::hw
