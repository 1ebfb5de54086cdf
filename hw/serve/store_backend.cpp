#include "hw/serve/store_backend.h"

#include <stdexcept>
#include <string>

namespace kvtier::hw {
namespace {

// Bytes moved between tiers (promotions, demotions, write-throughs), by (from, to), in the link's layout.
std::vector<double> moved_bytes(const TieredCache& cache) {
  const int tiers = cache.tier_count();
  std::vector<double> bytes(static_cast<size_t>(tiers * tiers), 0);
  for (CacheEventKind kind : {CacheEventKind::kPromote, CacheEventKind::kDemote, CacheEventKind::kWriteThrough}) {
    for (int from = 0; from < tiers; ++from) {
      for (int to = 0; to < tiers; ++to) {
        const TrafficTotals::Flow& f = cache.traffic().flow(kind, from, to);
        bytes[static_cast<size_t>(from * tiers + to)] += static_cast<double>(from == 0 ? f.to_bytes : f.from_bytes);
      }
    }
  }
  return bytes;
}

}  // namespace

StoreBackend::StoreBackend(TieredStore& store) : store_(store), start_(std::chrono::steady_clock::now()) {}

double StoreBackend::now() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

LoadHandle StoreBackend::start_load(std::span<const double>) {
  return next_load_++;
}

template <typename Call>
void StoreBackend::logged(Call&& call) {
  const std::vector<double> before = moved_bytes(store_.cache());
  const double start = now();
  call();
  const double end = now();
  const std::vector<double> after = moved_bytes(store_.cache());
  const int tiers = store_.cache().tier_count();
  bool moved = false;
  for (int from = 0; from < tiers; ++from) {
    for (int to = 0; to < tiers; ++to) {
      const size_t i = static_cast<size_t>(from * tiers + to);
      if (after[i] == before[i]) continue;
      moved = true;
      transfers_.push_back({transfer_path(store_.cache().tier(from).name, store_.cache().tier(to).name),
                            after[i] - before[i], start, end});
    }
  }
  if (moved) transfer_seconds_ += end - start;
}

void StoreBackend::cache_admitted(uint64_t request_id, std::span<const uint64_t> block_ids,
                                  const std::vector<bool>& recompute_tier) {
  for (size_t t = 1; t < recompute_tier.size(); ++t) {
    if (recompute_tier[t]) {
      throw std::invalid_argument("kvtier-hw serve loads every hit: the load policy breakeven (recompute a "
                                  "tier's hits) is not supported by the hardware store yet");
    }
  }
  logged([&] {
    StoreAdmission admission = store_.admit(block_ids);
    if (!admission.admitted) {
      throw std::logic_error("tiered store: request " + std::to_string(request_id) +
                             " does not fit where the cache model admitted it");
    }
    admissions_[request_id] = std::move(admission);
  });
}

void StoreBackend::cache_released(uint64_t request_id) {
  auto admission = admissions_.find(request_id);
  if (admission == admissions_.end()) throw std::logic_error("tiered store: release of a request never admitted");
  logged([&] { store_.release(admission->second); });
  admissions_.erase(admission);
  if (on_release_) on_release_(request_id);
}

void StoreBackend::cache_capacity_set(int tier, int64_t bytes) {
  if (tier != 0) throw std::logic_error("tiered store: only HBM's capacity changes at run time");
  logged([&] {
    if (!store_.set_hbm_capacity(bytes)) {
      throw std::logic_error("tiered store: HBM's pinned blocks do not fit where the cache model's do");
    }
  });
}

const std::vector<int64_t>& StoreBackend::hbm_pages(uint64_t request_id) const {
  auto admission = admissions_.find(request_id);
  if (admission == admissions_.end()) throw std::logic_error("tiered store: pages of a request never admitted");
  return admission->second.hbm_pages;
}

}  // namespace kvtier::hw
