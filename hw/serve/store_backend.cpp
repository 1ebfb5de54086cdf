#include "hw/serve/store_backend.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>

namespace kvtier::hw {
namespace {

// What the cache has moved between tiers so far, per (from, to): promotions (loads) and stores
// (demotions and write-throughs), in bytes as the link carries them and in blocks.
struct Moved {
  double bytes = 0;
  int64_t blocks = 0;
};
struct MovedTotals {
  std::vector<Moved> loads, stores;  // [from * tiers + to]
};

MovedTotals moved(const TieredCache& cache) {
  const int tiers = cache.tier_count();
  MovedTotals totals{std::vector<Moved>(static_cast<size_t>(tiers * tiers)),
                     std::vector<Moved>(static_cast<size_t>(tiers * tiers))};
  for (CacheEventKind kind : {CacheEventKind::kPromote, CacheEventKind::kDemote, CacheEventKind::kWriteThrough}) {
    std::vector<Moved>& out = kind == CacheEventKind::kPromote ? totals.loads : totals.stores;
    for (int from = 0; from < tiers; ++from) {
      for (int to = 0; to < tiers; ++to) {
        const TrafficTotals::Flow& f = cache.traffic().flow(kind, from, to);
        Moved& m = out[static_cast<size_t>(from * tiers + to)];
        m.bytes += static_cast<double>(from == 0 ? f.to_bytes : f.from_bytes);
        m.blocks += f.blocks;
      }
    }
  }
  return totals;
}

// Each block's copies of one move, merged: from the first start to the last end.
struct Span {
  std::chrono::steady_clock::time_point start, end;
};
using CopySpans = std::vector<std::vector<Span>>;  // [from * tiers + to]: per block, in order of first copy

CopySpans copy_spans(const std::vector<CopySpan>& copies, int tiers) {
  CopySpans spans(static_cast<size_t>(tiers * tiers));
  std::map<std::tuple<int, int, BlockKey>, size_t> index;  // (from, to, block) -> its place in spans
  for (const CopySpan& c : copies) {
    std::vector<Span>& move = spans[static_cast<size_t>(c.from_tier * tiers + c.to_tier)];
    auto [at, first] = index.try_emplace({c.from_tier, c.to_tier, c.key}, move.size());
    if (first) {
      move.push_back({c.start, c.end});
    } else {
      move[at->second].start = std::min(move[at->second].start, c.start);
      move[at->second].end = std::max(move[at->second].end, c.end);
    }
  }
  return spans;
}

std::chrono::steady_clock::time_point earliest(const std::vector<Span>& spans) {
  if (spans.empty()) throw std::logic_error("tiered store: a load without copies");
  auto first = std::min_element(spans.begin(), spans.end(),
                                [](const Span& a, const Span& b) { return a.start < b.start; });
  return first->start;
}

std::chrono::steady_clock::time_point latest(const std::vector<Span>& spans) {
  if (spans.empty()) throw std::logic_error("tiered store: a load without copies");
  auto last = std::max_element(spans.begin(), spans.end(),
                               [](const Span& a, const Span& b) { return a.end < b.end; });
  return last->end;
}

}  // namespace

StoreBackend::StoreBackend(TieredStore& store) : store_(store), start_(std::chrono::steady_clock::now()) {}

double StoreBackend::now() const {
  return seconds(std::chrono::steady_clock::now());
}

double StoreBackend::seconds(std::chrono::steady_clock::time_point t) const {
  return std::chrono::duration<double>(t - start_).count();
}

LoadHandle StoreBackend::start_load(std::span<const double>, uint64_t) {
  return next_load_++;
}

// Rows as the simulator logs them: a load is one row per tier it reads, spanning its copies from the first
// start to the last end; each stored block a row of its own, spanning its copies (one, or two through a
// staging page). A copy's span is that of the batched call it ran in.
template <typename Call>
void StoreBackend::logged(int64_t cause, Call&& call) {
  const MovedTotals before = moved(store_.cache());
  const double start = now();
  call();
  const double end = now();
  const MovedTotals after = moved(store_.cache());
  const TieredCache& cache = store_.cache();
  const int tiers = cache.tier_count();
  const CopySpans spans = copy_spans(store_.copies(), tiers);
  bool any = false;
  for (int from = 0; from < tiers; ++from) {
    for (int to = 0; to < tiers; ++to) {
      const auto i = static_cast<size_t>(from * tiers + to);
      const std::string path = transfer_path(cache.tier(from).name, cache.tier(to).name);
      const double load_bytes = after.loads[i].bytes - before.loads[i].bytes;
      const std::vector<Span>& blocks = spans[i];
      if (load_bytes > 0)
        transfers_.push_back({path, load_bytes, seconds(earliest(blocks)), seconds(latest(blocks)), cause});
      const int64_t stored = after.stores[i].blocks - before.stores[i].blocks;
      if (stored > 0 && static_cast<size_t>(stored) != blocks.size()) {
        throw std::logic_error("tiered store: " + std::to_string(stored) + " blocks stored on " + path +
                               " but " + std::to_string(blocks.size()) + " copied");
      }
      const double block_bytes = stored > 0 ? (after.stores[i].bytes - before.stores[i].bytes) / static_cast<double>(stored) : 0;
      for (int64_t b = 0; b < stored; ++b)
        transfers_.push_back({path, block_bytes, seconds(blocks[static_cast<size_t>(b)].start),
                              seconds(blocks[static_cast<size_t>(b)].end), cause});
      any = any || load_bytes > 0 || stored > 0;
    }
  }
  if (any) transfer_seconds_ += end - start;
}

void StoreBackend::cache_admitted(uint64_t request_id, std::span<const uint64_t> block_ids,
                                  const std::vector<bool>& recompute_tier) {
  for (size_t t = 1; t < recompute_tier.size(); ++t) {
    if (recompute_tier[t]) {
      throw std::invalid_argument("kvtier-hw serve loads every hit: the load policy breakeven (recompute a "
                                  "tier's hits) is not supported by the hardware store yet");
    }
  }
  logged(static_cast<int64_t>(request_id), [&] {
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
  logged(static_cast<int64_t>(request_id), [&] { store_.release(admission->second); });
  admissions_.erase(admission);
  if (on_release_) on_release_(request_id);
}

void StoreBackend::cache_capacity_set(int tier, int64_t bytes) {
  if (tier != 0) throw std::logic_error("tiered store: only HBM's capacity changes at run time");
  logged(kNoRequest, [&] {
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
