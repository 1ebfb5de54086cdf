// The copies of one batch of the tiered store, and the hazard check that decides when a batch must run
// before another copy may join it.
//
// Cache events come in causal order: "Y's HBM page was offloaded, then X was reloaded into it". Running
// them one at a time is correct but slow (one copy per page is 7x slower than a batched one:
// docs/hardware-mode.md), and batching by kind is fast but may run a read of a slot after a write that came
// later. A batch runs its copies in a fixed order of paths (TransferPath: HBM->host, NVMe->host, host->host,
// host->NVMe, host->HBM; erasing NVMe keys last), so a copy may join it when every earlier copy touching the
// same slot, with one of the two writing, runs in an earlier path. Otherwise the batch runs first. Within a
// path, copies touch distinct slots (or only read a shared one) and can go in any order, batched.
//
// Slots are HBM page ids, host page addresses (DRAM pool and staging pages alike) and NVMe keys.
// BatchedSlots makes freed slots wait for the batch to finish, so fresh destinations never conflict;
// what the check catches are chains within a batch (a block offloaded and then written to NVMe) and the
// rare order that must not be reversed (a block reloaded into HBM, then copied down from there).
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "hw/store/device_pages.h"
#include "hw/store/nvme_store.h"

namespace kvtier::hw {

// The copy paths, in the order a batch runs them.
enum class TransferPath { kOffload, kNvmeGet, kHostCopy, kNvmePut, kReload };
inline constexpr int kTransferPaths = 5;
// "hbm_to_dram", "nvme_to_dram", "dram_to_dram", "dram_to_nvme", "dram_to_hbm".
const char* transfer_path_name(TransferPath path);

// One block's copy. The fields a path uses:
//   kOffload  hbm_page -> host           kNvmeGet  key -> host          kHostCopy  host -> host_destination
//   kNvmePut  host -> key                kReload   host -> hbm_page
struct Transfer {
  TransferPath path = TransferPath::kOffload;
  BlockKey key = 0;  // the block (its NVMe key)
  // The cache's move this copy is part of: a promotion from a lower tier into HBM, or a store from a tier
  // to a slower one (a move through a staging page is two copies: NVMe -> staging -> HBM).
  int from_tier = -1;
  int to_tier = -1;
  int64_t hbm_page = -1;
  std::byte* host = nullptr;
  std::byte* host_destination = nullptr;
};

enum class SlotSpace : uint8_t { kHbm, kHost, kNvme };
struct SlotAccess {
  SlotSpace space;
  uint64_t id;  // page id, host address or key
  int phase;    // the TransferPath index, or kErasePhase
  bool write;
};
inline constexpr int kErasePhase = kTransferPaths;  // NVMe keys are erased after every copy ran

// The two slots a transfer reads and writes.
std::array<SlotAccess, 2> slot_accesses(const Transfer& transfer);

class TransferBatch {
 public:
  // Whether `access` must wait for the batch to run: an access to the same slot, one of them writing,
  // is already in the batch in the same or a later phase.
  bool conflicts(const SlotAccess& access) const;

  void add(const Transfer& transfer);
  // Erases the NVMe key once the batch's copies ran (a drop, or a move out of an exclusive tier).
  void erase_after(BlockKey key);

  bool empty() const { return erases_.empty() && count_ == 0; }
  const std::vector<Transfer>& transfers(TransferPath path) const {
    return by_path_[static_cast<size_t>(path)];
  }
  std::span<const BlockKey> erases() const { return erases_; }
  int64_t pending_puts() const { return static_cast<int64_t>(transfers(TransferPath::kNvmePut).size()); }
  void clear();

 private:
  struct SlotKey {
    SlotSpace space;
    uint64_t id;
    bool operator==(const SlotKey&) const = default;
  };
  struct SlotKeyHash {
    size_t operator()(const SlotKey& key) const { return key.id * 3 + static_cast<size_t>(key.space); }
  };
  struct LatestPhases {  // the latest phase that reads / writes the slot; -1 for none
    int read = -1;
    int write = -1;
  };

  void record(const SlotAccess& access);

  std::array<std::vector<Transfer>, kTransferPaths> by_path_;
  std::vector<BlockKey> erases_;
  std::unordered_map<SlotKey, LatestPhases, SlotKeyHash> touched_;
  int64_t count_ = 0;
};

// One block's copy as it ran: the move it is part of, and the span of the batched call that made it (the
// call copies all of its path's blocks at once, so each has the whole call's span).
struct CopySpan {
  BlockKey key = 0;
  int from_tier = -1;
  int to_tier = -1;
  std::chrono::steady_clock::time_point start, end;
};

// What one path moved, and the wall time its batched calls took (GPU copies up to their completion).
struct PathTotals {
  int64_t blocks = 0;
  uint64_t bytes = 0;
  double seconds = 0;
};
using TransferTotals = std::array<PathTotals, kTransferPaths>;

// Runs the batch: each path's copies as one batched call (device offload/reload, NvmeStore get/put,
// memcpy), path after path, then erases its NVMe keys. Adds to `totals` and returns the seconds spent.
// Throws what the device or the store throws; then the paths after the failing one have not run and
// no key was erased. `nvme` may be null when the batch has no NVMe copies.
// Host pages and NVMe blocks hold pages in the lower tiers' form: packed by `packing` (the device packs
// and unpacks them as they cross) when it is given, else the device's page_bytes(). Every path moves, and
// counts, that many bytes per block.
// With `spans`, appends each copy's CopySpan in the order the copies ran.
double run_batch(const TransferBatch& batch, DevicePages& device, const PagePacking* packing, NvmeStore* nvme,
                 TransferTotals& totals, std::vector<CopySpan>* spans = nullptr);

}  // namespace kvtier::hw
