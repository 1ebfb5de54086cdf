// The hardware mode's tiered KV store with its placement taken from the shared cache model.
//
// TieredStore owns a TieredCache (sim/cache) of one to three tiers, each found by its medium: tier 0 is HBM
// (DevicePages), then optionally pinned DRAM (a pool of host pages), then optionally NVMe (NvmeStore, keyed
// by block id). Capacities, policies,
// inclusive/exclusive placement, write-through and admission filters come from the TierSpecs; the store
// keeps, per tier, which slot holds which block, and turns the cache's events into copies:
//   place           an HBM page for a block prefill computes (the caller writes it)
//   promote DRAM->HBM   DRAM page -> HBM page (reload)      promote NVMe->HBM  NVMe -> staging page -> HBM
//   demote HBM->DRAM    HBM -> DRAM page (offload)          demote DRAM->NVMe  DRAM page -> NVMe (put)
//   demote HBM->NVMe    HBM -> staging page -> NVMe         write_through      the same copies, source kept
//   drop            the slot is freed (an NVMe key erased)
// A move out of an exclusive tier frees the source. Copies are batched (transfer_batch.h explains the
// order and when a batch must run before the next copy joins it) and run before admit() returns.
//
// The tiers below HBM share one layout: HBM's, and pages move unchanged, or with bf16 in HBM a
// group-scaled int4 one (page_packing.h). Then a copy out of HBM quantizes the page on the device before
// it crosses, a copy into HBM dequantizes it after it crossed, and DRAM, staging pages and NVMe hold the
// packed page: each tier's slots are its layout's bytes per block, and every copy moves and counts those
// bytes. A request's hits are observed from where the store holds the bytes, and checked against the
// cache's own prefix (they cannot differ unless the store is broken: a std::logic_error).
//
// Failures: a copy that fails (a full or broken disk, a corrupt block) throws StoreError from admit() or
// release(). The batch it belonged to is undone, so every block still has its bytes where the store says
// (resident_tier(), read_block()), and nothing stored before is lost; but the cache model cannot be
// rolled back, so the store is failed() from then on and refuses further admits and releases.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "hw/store/batched_slots.h"
#include "hw/store/device_pages.h"
#include "sim/core/medium.h"
#include "hw/store/nvme_store.h"
#include "hw/store/store_error.h"
#include "sim/cache/tiered_cache.h"
#include "hw/store/transfer_batch.h"

namespace kvtier::hw {

// What admit() did for one request.
class StoreAdmission {
 public:
  bool admitted = false;
  std::vector<int64_t> hbm_pages;  // per block of the request, in chain order: the HBM page holding it
  // Per block: the tier its bytes came from. -1: placed, the page holds no KV yet and the caller computes
  // it; 0: already in HBM; a lower tier: promoted from it.
  std::vector<int> source_tier;
  int64_t hit_blocks = 0;             // the leading run of blocks held in some tier
  std::vector<int64_t> hits_by_tier;  // of those, how many the fastest holding tier is t
  double transfer_seconds = 0;        // wall time of this admit's copies

 private:
  friend class TieredStore;
  Admission cache_admission_;
  std::vector<uint64_t> placed_;
  std::vector<CacheEvent> deferred_;  // write-through copies of placed blocks: made at release
};

// Headroom for batching. A slot freed in a batch is reused only after the batch ran (batched_slots.h),
// so a full tier whose evictions cascade (X: HBM -> DRAM pushes Y: DRAM -> NVMe) would run one batch per
// block; spare slots let that many cascades share a batch. HBM's spare pages are the device's pages
// beyond tier 0's capacity, NVMe's the store's slots beyond the NVMe tier's; DRAM's are allocated here.
struct TieredStoreOptions {
  int64_t staging_pages = 64;     // host pages for copies between HBM and NVMe
  int64_t spare_dram_pages = 64;  // DRAM pages beyond the DRAM tier's capacity
  // Int4 lower tiers: the values of one record (page_packing.h), the model's head_dim. Sizes and
  // round-tripped values do not depend on it.
  int int4_row_elements = 128;
};

// The tiers of a tier file (load_tier_file: a path or a name in configs/tiers) for a store: tier 0 on
// hbm, then dram and nvme where given, the lower tiers in one layout the store can make from tier 0's
// (lower_layout_problem). Throws ConfigError located at the tier's `medium` or `kv` for what the store
// cannot back.
std::vector<TierSpec> load_store_tiers(const std::string& spec, const ModelCard& model, int64_t block_tokens);

class TieredStore {
 public:
  // REQUIRES (else StoreError kBadRequest): tiers on HBM, then optionally DRAM, then optionally NVMe; tier
  // 0 storing device.page_bytes() per block, the others one layout the store can make from tier 0's
  // (page_packing()); device.page_count() >= tier 0's capacity; `nvme` given exactly when there is an NVMe
  // tier, taking blocks of the lower tiers' bytes per block.
  TieredStore(std::vector<TierSpec> tiers, DevicePages& device, std::unique_ptr<NvmeStore> nvme,
              TieredStoreOptions options = {});
  TieredStore(const TieredStore&) = delete;
  TieredStore& operator=(const TieredStore&) = delete;

  // The request starts: every block ends up in an HBM page, pinned. admitted is false, and nothing
  // changed, when tier 0 cannot hold the request next to the blocks pinned already. Placed pages must be
  // written before release(); a request must not read a block another unreleased request placed.
  StoreAdmission admit(std::span<const uint64_t> block_ids);
  // The request ends; its placed pages hold their KV. Makes their write-through copies and unpins.
  void release(StoreAdmission& admission);

  // HBM's capacity for cached blocks changes (a serving loop's decode KV grows and shrinks beside it): the
  // cache evicts to fit and the store makes the copies. Returns false, changing nothing, when the pinned
  // blocks would not fit; throws StoreError (kBadRequest) for more blocks than the device has pages.
  bool set_hbm_capacity(int64_t bytes);

  // The fastest tier holding the block's bytes, -1 for none.
  int resident_tier(uint64_t block) const;
  // Copies the block's page as HBM holds it (page_bytes(); unpacked by the CPU reference where its fastest
  // tier packs it) into `out`; false when no tier holds it. Works on a failed store too.
  // REQUIRES: out.size() >= page_bytes().
  bool read_block(uint64_t block, std::span<std::byte> out);
  // Copies the bytes the block's fastest tier holds (stored_page_bytes() of that tier) into `out`; false
  // when no tier holds it. REQUIRES: out.size() >= that tier's stored_page_bytes().
  bool read_stored_block(uint64_t block, std::span<std::byte> out);

  uint64_t page_bytes() const { return device_.page_bytes(); }
  // Bytes a block takes in `tier`: page_bytes() in HBM, the packed bytes below it when the store packs.
  uint64_t stored_page_bytes(int tier) const;
  // How the lower tiers pack HBM's pages; nullopt when they hold them unchanged.
  const std::optional<PagePacking>& packing() const { return packing_; }
  const TieredCache& cache() const { return cache_; }
  const TransferTotals& transfers() const { return totals_; }
  // Every copy the last admit(), release() or set_hbm_capacity() made, in the order they ran, each with the
  // span of its batched call.
  const std::vector<CopySpan>& copies() const { return copies_; }
  int64_t batches() const { return batches_; }  // batches that copied something
  bool failed() const { return failure_.has_value(); }

 private:
  class EventLog : public CacheEventSink {
   public:
    void on_event(const CacheEvent& event) override { events.push_back(event); }
    std::vector<CacheEvent> events;
  };
  struct MapChange {  // for undoing a failed batch
    int tier;
    uint64_t block;
    std::optional<uint64_t> before;
  };
  // A host page set aside for one kind of use: DRAM tier pages or staging pages, `page_bytes` each.
  struct HostPages {
    HostPages(const DevicePages& device, uint64_t page_bytes, int64_t count);
    std::byte* page(uint64_t index) const { return memory.data() + index * pitch; }
    uint64_t pitch;
    MemoryRegion memory;
    BatchedSlots slots;
  };
  // Where a copy down reads a block: a host page when it has one, else its HBM page.
  struct CopySource {
    std::byte* host = nullptr;
    int64_t hbm_page = -1;
  };

  static void check_tiers(const std::vector<TierSpec>& tiers, const DevicePages& device,
                          const TieredStoreOptions& options);
  static std::optional<PagePacking> packing_of(const std::vector<TierSpec>& tiers,
                                               const TieredStoreOptions& options);
  uint64_t lower_page_bytes() const { return packing_ ? packing_->packed_bytes() : page_bytes(); }
  void observe_residency(std::span<const uint64_t> block_ids, StoreAdmission& out) const;
  void check_against_cache(const PrefixHit& prefix, const StoreAdmission& out) const;
  void fill_pages(std::span<const uint64_t> block_ids, StoreAdmission& out) const;
  void throw_if_failed() const;
  // The tier on `medium`; -1 when the store has none.
  int tier_of(Medium medium) const { return tier_of_medium_[static_cast<size_t>(medium)]; }
  Medium medium_of(int tier) const { return cache_.tier(tier).medium; }

  // tiered_store_plan.cpp: cache events -> slots and copies.
  void apply(const CacheEvent& event, StoreAdmission* admission);
  void place(uint64_t block, StoreAdmission& admission);
  void add_copy(Transfer copy, uint64_t block, int from, int to);
  void promote(uint64_t block, int from);
  void copy_down(uint64_t block, int from, int to, bool keep_source);
  CopySource copy_source(uint64_t block, int from) const;
  bool copy_conflicts(uint64_t block, const CopySource& source, int to) const;
  void ensure_free(bool hbm, bool dram, bool staging, bool nvme_put);
  static uint64_t take(BatchedSlots& slots);
  uint64_t take_staging();
  uint64_t slot(int tier, uint64_t block) const;
  void map(int tier, uint64_t block, uint64_t slot);
  void unmap(int tier, uint64_t block);
  void flush();
  void roll_back();

  TieredCache cache_;
  std::array<int, kMedia.size()> tier_of_medium_;
  EventLog log_;
  DevicePages& device_;
  std::unique_ptr<NvmeStore> nvme_;
  std::optional<PagePacking> packing_;
  BatchedSlots hbm_;
  HostPages dram_;
  HostPages staging_;
  MemoryRegion hbm_readback_;  // read_block()'s host page for a block in HBM
  std::unordered_map<uint64_t, uint64_t> slot_of_[3];  // per tier: HBM page, DRAM page index or NVMe key
  TransferBatch batch_;
  std::vector<MapChange> journal_;
  std::unordered_map<uint64_t, std::byte*> arriving_;  // block -> host page a pending reload copies
  std::unordered_set<uint64_t> awaiting_kv_;           // placed by a request not released yet
  TransferTotals totals_{};
  double batch_seconds_ = 0;      // copies since the current admit or release began
  std::vector<CopySpan> copies_;  // and each of them
  int64_t batches_ = 0;
  std::optional<StoreError> failure_;
};

}  // namespace kvtier::hw
