#include "sim/engine/simgrid/store_queue.h"

#include <algorithm>
#include <bit>
#include <limits>

namespace sg4 = simgrid::s4u;

namespace kvtier {
void StoreQueues::add(Medium from, Medium to, const std::string& tier_path, double bytes, int64_t cause) {
  const size_t i = index(from, to);
  Path& path = paths_[i];
  path.pending_bytes += bytes;
  if (path.comms.empty() && path.pending_bytes > 0) idle_queued_ |= 1u << i;
  if (log_ != nullptr) path.pending.push_back({tier_path, bytes, 0, 0, cause});
}

void StoreQueues::start_idle() {
  for (uint32_t paths = idle_queued_; paths != 0; paths &= paths - 1) {
    const auto i = static_cast<size_t>(std::countr_zero(paths));
    start(i, paths_[i]);
  }
}

void StoreQueues::start(size_t index, Path& path) {
  const Medium from = kMedia[index / kMedia.size()];
  const Medium to = kMedia[index % kMedia.size()];
  path.comms = platform_.transfer(from, to, path.pending_bytes);
  idle_queued_ &= ~(1u << index);
  started_ += static_cast<int64_t>(path.comms.size());
  const double now = sg4::Engine::get_clock();
  path.earliest_landing_s = platform_.earliest_landing_s(from, to, path.pending_bytes, now);
  path.pending_bytes = 0;
  for (TransferRecord& store : path.pending) store.start_s = now;
  path.moving = std::move(path.pending);
  path.pending.clear();
}

double StoreQueues::landed_s(const Path& path) {
  if (!std::all_of(path.comms.begin(), path.comms.end(), [](const sg4::CommPtr& c) { return c->test(); }))
    return std::numeric_limits<double>::infinity();
  double landed = 0;
  for (const sg4::CommPtr& c : path.comms) landed = std::max(landed, c->get_finish_time());
  return landed;
}

void StoreQueues::finish(Path& path, double landed_s) {
  if (log_ != nullptr) {
    for (TransferRecord& store : path.moving) store.end_s = landed_s;
    log_->add_batch(std::move(path.moving));
  }
  path.moving.clear();
  path.comms.clear();
}

void StoreQueues::pump() {
  const double now = sg4::Engine::get_clock();
  for (size_t i = 0; i < kPaths; ++i) {
    Path& path = paths_[i];
    if (!path.may_have_landed_by(now)) continue;
    const double landed = landed_s(path);
    if (landed > now) continue;  // still moving
    finish(path, landed);
    if (path.pending_bytes > 0) start(i, path);
  }
}

bool StoreQueues::defer_pump(double now) {
  if (deferred_pumps_.size() == kMostDeferredPumps) return false;
  for (const Path& path : paths_) {
    if (path.may_have_landed_by(now) && path.pending_bytes > 0) return false;
  }
  if (deferred_pumps_.empty() || deferred_pumps_.back() < now) deferred_pumps_.push_back(now);
  return true;
}

// A batch landed by a pump's time was over when that pump ran: with no stores behind it, the pump only
// logged it. Each batch's landing is asked once; pumps in time order, paths in index order, as pump()
// walks them.
void StoreQueues::pump_deferred() {
  if (deferred_pumps_.empty()) return;
  std::array<double, kPaths> landed{};
  for (size_t i = 0; i < kPaths; ++i) {
    const bool asked = paths_[i].may_have_landed_by(deferred_pumps_.back());
    landed[i] = asked ? landed_s(paths_[i]) : std::numeric_limits<double>::infinity();
  }
  for (double at : deferred_pumps_) {
    for (size_t i = 0; i < kPaths; ++i) {
      if (paths_[i].may_have_landed_by(at) && landed[i] <= at) finish(paths_[i], landed[i]);
    }
  }
  deferred_pumps_.clear();
}

bool StoreQueues::landed_unpumped(Medium from, Medium to) const {
  return !deferred_pumps_.empty() && paths_[index(from, to)].may_have_landed_by(deferred_pumps_.back());
}

void StoreQueues::finish_in_flight() {
  for (size_t i = 0; i < kPaths; ++i) {
    Path& path = paths_[i];
    if (path.comms.empty()) continue;
    for (const sg4::CommPtr& c : path.comms) c->wait();
    finish(path, landed_s(path));
    if (path.pending_bytes > 0) idle_queued_ |= 1u << i;
  }
}

bool StoreQueues::moving() const {
  return std::any_of(paths_.begin(), paths_.end(), [](const Path& path) { return !path.comms.empty(); });
}

std::vector<sg4::CommPtr> StoreQueues::in_flight() const {
  std::vector<sg4::CommPtr> out;
  for (const Path& path : paths_) out.insert(out.end(), path.comms.begin(), path.comms.end());
  return out;
}

double StoreQueues::earliest_start_in_flight() const {
  double earliest = std::numeric_limits<double>::infinity();
  for (const Path& path : paths_) {
    if (!path.moving.empty()) earliest = std::min(earliest, path.moving.front().start_s);
  }
  return earliest;
}

double StoreQueues::earliest_landing_s() const {
  double earliest = std::numeric_limits<double>::infinity();
  for (const Path& path : paths_) {
    if (!path.comms.empty()) earliest = std::min(earliest, path.earliest_landing_s);
  }
  return earliest;
}

}  // namespace kvtier
