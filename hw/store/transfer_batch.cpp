#include "hw/store/transfer_batch.h"

#include <algorithm>

namespace kvtier::hw {

const char* transfer_path_name(TransferPath path) {
  switch (path) {
    case TransferPath::kOffload:
      return "hbm_to_dram";
    case TransferPath::kNvmeGet:
      return "nvme_to_dram";
    case TransferPath::kHostCopy:
      return "dram_to_dram";
    case TransferPath::kNvmePut:
      return "dram_to_nvme";
    case TransferPath::kReload:
      return "dram_to_hbm";
  }
  return "?";
}

std::array<SlotAccess, 2> slot_accesses(const Transfer& t) {
  const int phase = static_cast<int>(t.path);
  const auto host = [&](const std::byte* address, bool write) {
    return SlotAccess{SlotSpace::kHost, reinterpret_cast<uintptr_t>(address), phase, write};
  };
  const SlotAccess hbm{SlotSpace::kHbm, static_cast<uint64_t>(t.hbm_page), phase,
                       t.path == TransferPath::kReload};
  const SlotAccess nvme{SlotSpace::kNvme, t.key, phase, t.path == TransferPath::kNvmePut};
  switch (t.path) {
    case TransferPath::kOffload:
    case TransferPath::kReload:
      return {hbm, host(t.host, t.path == TransferPath::kOffload)};
    case TransferPath::kNvmeGet:
    case TransferPath::kNvmePut:
      return {nvme, host(t.host, t.path == TransferPath::kNvmeGet)};
    case TransferPath::kHostCopy:
      return {host(t.host, false), host(t.host_destination, true)};
  }
  return {hbm, nvme};
}

bool TransferBatch::conflicts(const SlotAccess& access) const {
  auto it = touched_.find({access.space, access.id});
  if (it == touched_.end()) return false;
  const LatestPhases& latest = it->second;
  const int blocking = access.write ? std::max(latest.read, latest.write) : latest.write;
  return blocking >= access.phase;
}

void TransferBatch::record(const SlotAccess& access) {
  LatestPhases& latest = touched_[{access.space, access.id}];
  int& phase = access.write ? latest.write : latest.read;
  phase = std::max(phase, access.phase);
}

void TransferBatch::add(const Transfer& transfer) {
  for (const SlotAccess& access : slot_accesses(transfer)) record(access);
  by_path_[static_cast<size_t>(transfer.path)].push_back(transfer);
  ++count_;
}

void TransferBatch::erase_after(BlockKey key) {
  record({SlotSpace::kNvme, key, kErasePhase, true});
  erases_.push_back(key);
}

void TransferBatch::clear() {
  for (auto& transfers : by_path_) transfers.clear();
  erases_.clear();
  touched_.clear();
  count_ = 0;
}

}  // namespace kvtier::hw
