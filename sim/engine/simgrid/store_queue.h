// Background stores (demotions and write-throughs) as an offload worker would issue them.
//
// A cache that evicts faster than a link drains builds a backlog. Handing SimGrid one Comm per evicted
// block would put thousands of flows on that link at once, and the flow solver's cost grows with the
// flows in flight (the simulation turned quadratic on the Mooncake sample). A real offload path has a
// worker per destination with a bounded queue; so here each (from, to) path has one transfer in flight,
// and bytes that arrive meanwhile wait and go together in the next one. The link carries the same bytes
// at the same rate; SimGrid sees one flow per path.
#pragma once

#include <map>
#include <simgrid/s4u.hpp>
#include <utility>
#include <vector>

#include "sim/engine/simgrid/platform.h"

namespace kvtier {

class StoreQueues {
 public:
  explicit StoreQueues(Platform& platform) : platform_(platform) {}

  // Queues `bytes` for the path; starts a transfer at once if the path is idle.
  void add(Medium from, Medium to, double bytes);
  // Starts the next batch on every path whose transfer has finished. Call at every engine iteration.
  void pump();
  // Transfers in flight, for an idle engine to wait on.
  std::vector<simgrid::s4u::CommPtr> in_flight() const;
  double queued_bytes() const;
  int64_t transfers_started() const { return started_; }

 private:
  struct Path {
    double pending_bytes = 0;
    std::vector<simgrid::s4u::CommPtr> comms;
  };
  void start(std::pair<Medium, Medium> key, Path& path);

  Platform& platform_;
  std::map<std::pair<Medium, Medium>, Path> paths_;
  int64_t started_ = 0;
};

}  // namespace kvtier
