#include "hw/store/tiered_store.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace kvtier::hw {
namespace {

// The media a store backs, in the order its tiers take them: HBM, then DRAM and NVMe where present.
constexpr std::array<Medium, 3> kStoreMedia = {Medium::kHbm, Medium::kDram, Medium::kNvme};

std::array<int, kMedia.size()> tiers_by_medium(const std::vector<TierSpec>& tiers) {
  std::array<int, kMedia.size()> tier_of;
  tier_of.fill(-1);
  for (size_t t = 0; t < tiers.size(); ++t) tier_of[static_cast<size_t>(tiers[t].medium)] = static_cast<int>(t);
  return tier_of;
}

int64_t dram_pages(const std::vector<TierSpec>& tiers, const TieredStoreOptions& options) {
  for (const TierSpec& tier : tiers) {
    if (tier.medium == Medium::kDram) return tier.capacity_blocks() + options.spare_dram_pages;
  }
  return 0;
}

[[noreturn]] void bad_request(const std::string& what) {
  throw StoreError(StoreErrc::kBadRequest, "tiered store: " + what);
}

}  // namespace

std::vector<TierSpec> load_store_tiers(const std::string& spec, const ModelCard& model, int64_t block_tokens) {
  const FileTiers file = parse_tier_file(load_tier_file(spec), model, block_tokens);
  const std::vector<TierSpec>& tiers = file.tiers;
  for (size_t t = 1; t < tiers.size(); ++t) {
    if (tiers[t].medium == Medium::kRemote) {
      file.medium_keys[t].fail("the hardware mode's store has no remote pool; use dram or nvme");
    }
    const std::string problem = lower_layout_problem(tiers[0].layout, tiers[t].layout, model.head_dim);
    if (!problem.empty()) file.kv_keys[t].fail(problem);
    if (t > 1 && tiers[t].layout != tiers[1].layout) {
      file.kv_keys[t].fail("the tiers below HBM move pages between them unchanged, so they need one layout, " +
                           tiers[1].layout.name);
    }
  }
  const auto by_medium = [](const TierSpec& a, const TierSpec& b) { return a.medium < b.medium; };
  if (!std::is_sorted(tiers.begin(), tiers.end(), by_medium)) {
    file.hierarchy.fail("expected the store's order: hbm, then dram, then nvme");
  }
  return tiers;
}

TieredStore::HostPages::HostPages(const DevicePages& device, uint64_t page_bytes, int64_t count)
    : pitch(round_up_to_io(page_bytes)),
      memory(device.allocate_host(std::max<uint64_t>(count, 1) * pitch)),
      slots(static_cast<uint64_t>(count)) {}

TieredStore::TieredStore(std::vector<TierSpec> tiers, DevicePages& device, std::unique_ptr<NvmeStore> nvme,
                         TieredStoreOptions options)
    : cache_((check_tiers(tiers, device, options), tiers)),
      tier_of_medium_(tiers_by_medium(tiers)),
      device_(device),
      nvme_(std::move(nvme)),
      packing_(packing_of(tiers, options)),
      hbm_(static_cast<uint64_t>(device.page_count())),
      dram_(device, lower_page_bytes(), dram_pages(tiers, options)),
      staging_(device, lower_page_bytes(), options.staging_pages),
      hbm_readback_(device.allocate_host(device.host_pitch())) {
  if ((nvme_ != nullptr) != (tier_of(Medium::kNvme) >= 0)) {
    bad_request(nvme_ ? "an NVMe store was given but there is no nvme tier"
                      : "the nvme tier needs an NVMe store");
  }
  cache_.set_event_sink(&log_);
}

void TieredStore::check_tiers(const std::vector<TierSpec>& tiers, const DevicePages& device,
                              const TieredStoreOptions& options) {
  if (tiers.empty() || tiers[0].medium != Medium::kHbm) bad_request("expected tier 0 on hbm");
  auto earliest = kStoreMedia.begin();  // media before it are taken or would be out of order
  for (const TierSpec& tier : tiers) {
    auto at = std::find(earliest, kStoreMedia.end(), tier.medium);
    if (at == kStoreMedia.end()) {
      bad_request("tier " + tier.name + " is on " + std::string(medium_name(tier.medium)) +
                  "; the store holds hbm, then optionally dram, then optionally nvme, in that order");
    }
    earliest = at + 1;
  }
  if (static_cast<uint64_t>(tiers[0].bytes_per_block()) != device.page_bytes()) {
    bad_request("tier " + tiers[0].name + " stores " + std::to_string(tiers[0].bytes_per_block()) +
                " bytes per block but a device page holds " + std::to_string(device.page_bytes()));
  }
  for (size_t t = 2; t < tiers.size(); ++t) {
    if (tiers[t].layout != tiers[1].layout) {
      bad_request("tier " + tiers[t].name + " is in " + tiers[t].layout.name + " but tier " + tiers[1].name +
                  " in " + tiers[1].layout.name + "; the tiers below HBM move pages between them unchanged, "
                  "so they need one layout");
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

// After check_tiers(): the packing of tier 1, which every lower tier shares.
std::optional<PagePacking> TieredStore::packing_of(const std::vector<TierSpec>& tiers,
                                                   const TieredStoreOptions& options) {
  if (tiers.size() < 2) return std::nullopt;
  return page_packing(tiers[0], tiers[1], options.int4_row_elements);
}

uint64_t TieredStore::stored_page_bytes(int tier) const {
  return medium_of(tier) == Medium::kHbm ? page_bytes() : lower_page_bytes();
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
    out.source_tier.push_back(leading || (tier >= 0 && medium_of(tier) == Medium::kHbm) ? tier : -1);
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
  const int hbm = tier_of(Medium::kHbm);
  for (uint64_t block : block_ids) out.hbm_pages.push_back(static_cast<int64_t>(slot(hbm, block)));
}

StoreAdmission TieredStore::admit(std::span<const uint64_t> block_ids) {
  throw_if_failed();
  StoreAdmission out;
  observe_residency(block_ids, out);
  log_.events.clear();
  if (!cache_.admit(block_ids, out.cache_admission_)) return out;
  check_against_cache(out.cache_admission_.prefix, out);
  batch_seconds_ = 0;
  copies_.clear();
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
  copies_.clear();
  for (const CacheEvent& event : admission.deferred_) apply(event, nullptr);
  for (const CacheEvent& event : log_.events) apply(event, nullptr);
  flush();
  admission.transfer_seconds += batch_seconds_;
  admission.admitted = false;
  admission.placed_.clear();
  admission.deferred_.clear();
}

bool TieredStore::set_hbm_capacity(int64_t bytes) {
  throw_if_failed();
  const int hbm = tier_of(Medium::kHbm);
  if (bytes / cache_.tier(hbm).bytes_per_block() > device_.page_count()) {
    bad_request("an HBM capacity of " + std::to_string(bytes) + " bytes needs more pages than the device's " +
                std::to_string(device_.page_count()));
  }
  log_.events.clear();
  if (!cache_.set_capacity(hbm, bytes)) return false;
  batch_seconds_ = 0;
  copies_.clear();
  for (const CacheEvent& event : log_.events) apply(event, nullptr);
  flush();
  return true;
}

bool TieredStore::read_block(uint64_t block, std::span<std::byte> out) {
  if (out.size() < page_bytes()) bad_request("read_block needs a buffer of a whole page");
  const int tier = resident_tier(block);
  if (tier < 0) return false;
  if (medium_of(tier) == Medium::kHbm || !packing_) return read_stored_block(block, out);
  std::vector<std::byte> packed(lower_page_bytes());
  read_stored_block(block, packed);
  unpack_page(*packing_, packed.data(), out.data());
  return true;
}

// Outside admit() and release() no batch is pending, so every staging page is free: page 0 serves.
bool TieredStore::read_stored_block(uint64_t block, std::span<std::byte> out) {
  const int tier = resident_tier(block);
  if (tier < 0) return false;
  if (out.size() < stored_page_bytes(tier)) bad_request("read_stored_block needs a buffer of a whole page");
  std::byte* host = staging_.page(0);
  if (medium_of(tier) == Medium::kHbm) {
    host = hbm_readback_.data();
    const int64_t page = static_cast<int64_t>(slot(tier, block));
    device_.offload({&page, 1}, {&host, 1});
    device_.synchronize();
  } else if (medium_of(tier) == Medium::kDram) {
    host = dram_.page(slot(tier, block));
  } else {
    const BlockRead read{block, {host, staging_.pitch}};
    nvme_->get({&read, 1});
  }
  std::memcpy(out.data(), host, stored_page_bytes(tier));
  return true;
}

}  // namespace kvtier::hw
