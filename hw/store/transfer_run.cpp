// run_batch(): one batched call per path, in the order that TransferBatch's hazard check assumes.
#include <chrono>
#include <cstring>

#include "hw/store/store_error.h"
#include "hw/store/transfer_batch.h"

namespace kvtier::hw {
namespace {

void run_device_path(const std::vector<Transfer>& transfers, DevicePages& device, const PagePacking* packing,
                     bool offload) {
  std::vector<int64_t> pages;
  std::vector<std::byte*> hosts;
  for (const Transfer& t : transfers) {
    pages.push_back(t.hbm_page);
    hosts.push_back(t.host);
  }
  if (packing != nullptr && offload) {
    device.offload_packed(*packing, pages, hosts);
  } else if (packing != nullptr) {
    device.reload_packed(*packing, pages, hosts);
  } else if (offload) {
    device.offload(pages, hosts);
  } else {
    device.reload(pages, hosts);
  }
  device.synchronize();
}

// Bytes of a page below HBM.
uint64_t lower_page_bytes(const DevicePages& device, const PagePacking* packing) {
  return packing != nullptr ? packing->packed_bytes() : device.page_bytes();
}

NvmeStore& require_store(NvmeStore* nvme) {
  if (nvme == nullptr) throw StoreError(StoreErrc::kBadRequest, "an NVMe transfer but no NVMe tier");
  return *nvme;
}

void run_path(TransferPath path, const std::vector<Transfer>& transfers, DevicePages& device,
              const PagePacking* packing, NvmeStore* nvme) {
  const uint64_t page_bytes = lower_page_bytes(device, packing);
  switch (path) {
    case TransferPath::kOffload:
    case TransferPath::kReload:
      run_device_path(transfers, device, packing, path == TransferPath::kOffload);
      return;
    case TransferPath::kNvmeGet: {
      std::vector<BlockRead> reads;
      for (const Transfer& t : transfers) reads.push_back({t.key, {t.host, round_up_to_io(page_bytes)}});
      require_store(nvme).get(reads);
      return;
    }
    case TransferPath::kNvmePut: {
      std::vector<BlockWrite> writes;
      for (const Transfer& t : transfers) writes.push_back({t.key, {t.host, page_bytes}});
      require_store(nvme).put(writes);
      return;
    }
    case TransferPath::kHostCopy:
      for (const Transfer& t : transfers) std::memcpy(t.host_destination, t.host, page_bytes);
      return;
  }
}

}  // namespace

double run_batch(const TransferBatch& batch, DevicePages& device, const PagePacking* packing, NvmeStore* nvme,
                 TransferTotals& totals, std::vector<CopySpan>* spans) {
  double seconds = 0;
  for (int p = 0; p < kTransferPaths; ++p) {
    const auto path = static_cast<TransferPath>(p);
    const std::vector<Transfer>& transfers = batch.transfers(path);
    if (transfers.empty()) continue;
    const auto start = std::chrono::steady_clock::now();
    run_path(path, transfers, device, packing, nvme);
    const auto end = std::chrono::steady_clock::now();
    const double elapsed = std::chrono::duration<double>(end - start).count();
    if (spans != nullptr) {
      for (const Transfer& t : transfers) spans->push_back({t.key, t.from_tier, t.to_tier, start, end});
    }
    PathTotals& total = totals[static_cast<size_t>(p)];
    total.blocks += static_cast<int64_t>(transfers.size());
    total.bytes += transfers.size() * lower_page_bytes(device, packing);
    total.seconds += elapsed;
    seconds += elapsed;
  }
  for (BlockKey key : batch.erases()) require_store(nvme).erase(key);
  return seconds;
}

}  // namespace kvtier::hw
