// TieredStore's planner: each cache event becomes slot changes and copies in the current batch.
//
// Why batches and not one copy per event, and why this order is safe: transfer_batch.h. The planner
// keeps three rules:
//   1. slots a batch frees stay taken until it ran (BatchedSlots), so new destinations never hold bytes
//      the batch still needs, and a failed batch can be undone. "X promoted out of a DRAM page, then Y
//      demoted into it" and "Y's HBM page freed by its offload, then X reloaded into it" thus take
//      other, spare pages (TieredStoreOptions); when a pool has none left, the batch runs first;
//   2. before a copy joins the batch, its source slot and NVMe key are checked against the batch; on a
//      conflict the batch runs first. Sources are chosen after that, since running the batch moves them;
//   3. every slot change is journaled, so a batch whose copies fail is undone.
// A block being reloaded in this batch is copied down from the host page that feeds the reload, not
// from HBM, where its bytes arrive only at the end of the batch.
#include <stdexcept>

#include "hw/store/tiered_store.h"

namespace kvtier::hw {

void TieredStore::apply(const CacheEvent& event, StoreAdmission* admission) {
  switch (event.kind) {
    case CacheEventKind::kPlace:
      if (admission == nullptr) throw std::logic_error("tiered store: a block placed outside admit()");
      place(event.block, *admission);
      return;
    case CacheEventKind::kPromote:
      promote(event.block, event.from_tier);
      return;
    case CacheEventKind::kDemote:
      copy_down(event.block, event.from_tier, event.to_tier, /*keep_source=*/false);
      return;
    case CacheEventKind::kWriteThrough:
      // A block prefill has not computed yet has no bytes to copy: its copies wait for release().
      if (awaiting_kv_.contains(event.block)) {
        if (admission == nullptr) throw std::logic_error("tiered store: a copy of a block with no KV yet");
        admission->deferred_.push_back(event);
        return;
      }
      copy_down(event.block, event.from_tier, event.to_tier, /*keep_source=*/true);
      return;
    case CacheEventKind::kDrop:
      unmap(event.from_tier, event.block);
      return;
  }
}

void TieredStore::place(uint64_t block, StoreAdmission& admission) {
  ensure_free(true, false, false, false);
  map(tier_of(Medium::kHbm), block, take(hbm_));
  awaiting_kv_.insert(block);
  admission.placed_.push_back(block);
}

// Adds a copy of `block` that is part of its move from tier `from` to tier `to`.
void TieredStore::add_copy(Transfer copy, uint64_t block, int from, int to) {
  copy.key = block;
  copy.from_tier = from;
  copy.to_tier = to;
  batch_.add(copy);
}

void TieredStore::promote(uint64_t block, int from) {
  const bool from_nvme = medium_of(from) == Medium::kNvme;
  ensure_free(true, false, from_nvme, false);
  const SlotAccess source =
      from_nvme
          ? SlotAccess{SlotSpace::kNvme, block, static_cast<int>(TransferPath::kNvmeGet), false}
          : SlotAccess{SlotSpace::kHost, reinterpret_cast<uintptr_t>(dram_.page(slot(from, block))),
                       static_cast<int>(TransferPath::kReload), false};
  if (batch_.conflicts(source)) flush();

  const int64_t page = static_cast<int64_t>(take(hbm_));
  std::byte* host = nullptr;
  const int hbm = tier_of(Medium::kHbm);
  if (from_nvme) {
    host = staging_.page(take_staging());
    add_copy({.path = TransferPath::kNvmeGet, .host = host}, block, from, hbm);
  } else {
    host = dram_.page(slot(from, block));
  }
  add_copy({.path = TransferPath::kReload, .hbm_page = page, .host = host}, block, from, hbm);
  arriving_[block] = host;
  map(tier_of(Medium::kHbm), block, static_cast<uint64_t>(page));
  if (cache_.tier(from).placement == Placement::kExclusive) unmap(from, block);
}

TieredStore::CopySource TieredStore::copy_source(uint64_t block, int from) const {
  if (medium_of(from) == Medium::kDram) return {.host = dram_.page(slot(from, block))};
  auto arriving = arriving_.find(block);
  if (arriving != arriving_.end()) return {.host = arriving->second};
  return {.hbm_page = static_cast<int64_t>(slot(tier_of(Medium::kHbm), block))};
}

bool TieredStore::copy_conflicts(uint64_t block, const CopySource& source, int to) const {
  const int reader = static_cast<int>(source.host == nullptr             ? TransferPath::kOffload
                                      : medium_of(to) == Medium::kDram ? TransferPath::kHostCopy
                                                                       : TransferPath::kNvmePut);
  const SlotAccess read =
      source.host != nullptr
          ? SlotAccess{SlotSpace::kHost, reinterpret_cast<uintptr_t>(source.host), reader, false}
          : SlotAccess{SlotSpace::kHbm, static_cast<uint64_t>(source.hbm_page), reader, false};
  const SlotAccess key_write{SlotSpace::kNvme, block, static_cast<int>(TransferPath::kNvmePut), true};
  return batch_.conflicts(read) || (medium_of(to) == Medium::kNvme && batch_.conflicts(key_write));
}

// A demotion or write-through from tier `from` to the slower tier `to`.
void TieredStore::copy_down(uint64_t block, int from, int to, bool keep_source) {
  const bool to_dram = medium_of(to) == Medium::kDram;
  ensure_free(false, to_dram, !to_dram && medium_of(from) == Medium::kHbm, !to_dram);
  if (copy_conflicts(block, copy_source(block, from), to)) flush();
  const CopySource source = copy_source(block, from);

  if (to_dram) {
    const uint64_t index = take(dram_.slots);
    std::byte* destination = dram_.page(index);
    if (source.host != nullptr) {
      add_copy({.path = TransferPath::kHostCopy, .host = source.host, .host_destination = destination}, block,
               from, to);
    } else {
      add_copy({.path = TransferPath::kOffload, .hbm_page = source.hbm_page, .host = destination}, block,
               from, to);
    }
    map(to, block, index);
  } else {
    std::byte* host = source.host;
    if (host == nullptr) {
      host = staging_.page(take_staging());
      add_copy({.path = TransferPath::kOffload, .hbm_page = source.hbm_page, .host = host}, block, from, to);
    }
    add_copy({.path = TransferPath::kNvmePut, .host = host}, block, from, to);
    map(to, block, block);
  }
  if (!keep_source) unmap(from, block);
}

// Runs the batch first when a pool the next event needs has no free slot. NVMe: the store's free slots
// minus the batch's puts; keys the batch erases free slots only once it ran. If the store is still full
// after that it is smaller than its tier, and the put fails with kFull when the batch runs.
void TieredStore::ensure_free(bool hbm, bool dram, bool staging, bool nvme_put) {
  const bool nvme_full = nvme_put && nvme_->free_blocks() <= static_cast<uint64_t>(batch_.pending_puts());
  if ((hbm && !hbm_.has_free()) || (dram && !dram_.slots.has_free()) ||
      (staging && !staging_.slots.has_free()) || nvme_full) {
    flush();
  }
}

// ensure_free() ran before, so a slot is free unless the store and the cache model disagree.
uint64_t TieredStore::take(BatchedSlots& slots) {
  const std::optional<uint64_t> slot = slots.allocate();
  if (!slot)
    throw std::logic_error("tiered store: a tier has no free slot although the cache model made room");
  return *slot;
}

// Staging pages serve one batch only.
uint64_t TieredStore::take_staging() {
  const uint64_t index = take(staging_.slots);
  staging_.slots.release_after_batch(index);
  return index;
}

uint64_t TieredStore::slot(int tier, uint64_t block) const {
  auto it = slot_of_[tier].find(block);
  if (it == slot_of_[tier].end()) {
    throw std::logic_error("tiered store: block " + std::to_string(block) + " is not in tier " +
                           std::to_string(tier) + " although the cache model says so");
  }
  return it->second;
}

void TieredStore::map(int tier, uint64_t block, uint64_t slot) {
  auto [it, inserted] = slot_of_[tier].try_emplace(block, slot);
  journal_.push_back({tier, block, inserted ? std::nullopt : std::optional<uint64_t>(it->second)});
  it->second = slot;
}

void TieredStore::unmap(int tier, uint64_t block) {
  const uint64_t old = slot(tier, block);
  journal_.push_back({tier, block, old});
  slot_of_[tier].erase(block);
  switch (medium_of(tier)) {
    case Medium::kHbm:
      hbm_.release_after_batch(old);
      break;
    case Medium::kDram:
      dram_.slots.release_after_batch(old);
      break;
    case Medium::kNvme:
      batch_.erase_after(block);
      break;
    case Medium::kRemote:
      throw std::logic_error("tiered store: a remote tier");  // check_tiers refuses one
  }
}

void TieredStore::flush() {
  try {
    const bool copies = !batch_.empty();
    batch_seconds_ +=
        run_batch(batch_, device_, packing_ ? &*packing_ : nullptr, nvme_.get(), totals_, &copies_);
    batches_ += copies;
  } catch (const StoreError& error) {
    roll_back();
    failure_ = error;
    throw;
  } catch (const std::exception& error) {
    roll_back();
    failure_ = StoreError(StoreErrc::kIo, error.what());
    throw;
  }
  for (BatchedSlots* slots : {&hbm_, &dram_.slots, &staging_.slots}) slots->commit();
  batch_.clear();
  journal_.clear();
  arriving_.clear();
}

// The batch did not run (or not all of it): every slot change it made is undone, so the maps say where
// the bytes still are. NVMe keys a failed get found corrupt were erased by the store and stay gone.
void TieredStore::roll_back() {
  for (auto change = journal_.rbegin(); change != journal_.rend(); ++change) {
    if (change->before) {
      slot_of_[change->tier][change->block] = *change->before;
    } else {
      slot_of_[change->tier].erase(change->block);
    }
  }
  if (nvme_) {
    std::erase_if(slot_of_[tier_of(Medium::kNvme)],
                  [&](const auto& entry) { return !nvme_->contains(entry.first); });
  }
  for (BatchedSlots* slots : {&hbm_, &dram_.slots, &staging_.slots}) slots->rollback();
  batch_.clear();
  journal_.clear();
  arriving_.clear();
}

}  // namespace kvtier::hw
