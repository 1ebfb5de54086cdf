#include "sim/engine/simgrid/store_queue.h"

#include <algorithm>

namespace sg4 = simgrid::s4u;

namespace kvtier {

void StoreQueues::add(Medium from, Medium to, double bytes) {
  auto key = std::make_pair(from, to);
  Path& path = paths_[key];
  path.pending_bytes += bytes;
  if (path.comms.empty()) start(key, path);
}

void StoreQueues::start(std::pair<Medium, Medium> key, Path& path) {
  path.comms = platform_.transfer(key.first, key.second, path.pending_bytes);
  started_ += static_cast<int64_t>(path.comms.size());
  path.pending_bytes = 0;
}

void StoreQueues::pump() {
  for (auto& [key, path] : paths_) {
    if (path.comms.empty()) continue;
    if (!std::all_of(path.comms.begin(), path.comms.end(), [](const sg4::CommPtr& c) { return c->test(); }))
      continue;
    path.comms.clear();
    if (path.pending_bytes > 0) start(key, path);
  }
}

std::vector<sg4::CommPtr> StoreQueues::in_flight() const {
  std::vector<sg4::CommPtr> out;
  for (const auto& [key, path] : paths_) out.insert(out.end(), path.comms.begin(), path.comms.end());
  return out;
}

double StoreQueues::queued_bytes() const {
  double total = 0;
  for (const auto& [key, path] : paths_) total += path.pending_bytes;
  return total;
}

}  // namespace kvtier
