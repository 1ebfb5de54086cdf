#include "sim/engine/simgrid/flow_meter.h"

#include <algorithm>

namespace kvtier {

void FlowMeter::start(const simgrid::s4u::CommPtr& comm, const std::vector<int>& route, double bytes,
                      double comm_bytes) {
  if (flows_.size() >= prune_at_) {
    prune();
    prune_at_ = std::max<size_t>(64, 2 * flows_.size());
  }
  for (int l : route) link_bytes_[l] += bytes;
  flows_.push_back({comm, &route, comm_bytes, 0});
}

void FlowMeter::count(Flow& flow, double done) {
  for (int l : *flow.links) carried_[l] += done - flow.counted;
  flow.counted = done;
}

// A Comm's remaining bytes are its progress: all of them while its latency runs, 0 once it has landed (or
// been cancelled, which is why a cancel is counted first). Reading them is not a simcall, so sampling does
// not reorder the actors.
bool FlowMeter::cancel(const simgrid::s4u::CommPtr& comm) {
  auto it = std::find_if(flows_.begin(), flows_.end(), [&](const Flow& f) { return f.comm == comm; });
  if (it == flows_.end()) return false;
  count(*it, it->bytes - comm->get_remaining());
  flows_.erase(it);
  return true;
}

// Counts every flow's progress and forgets the flows that have landed.
void FlowMeter::prune() {
  std::erase_if(flows_, [&](Flow& f) {
    double remaining = f.comm->get_remaining();
    count(f, f.bytes - remaining);
    return remaining <= 0;
  });
}

std::vector<double> FlowMeter::carried_bytes() {
  prune();
  return carried_;
}

}  // namespace kvtier
