// Background stores (demotions and write-throughs) as an offload worker would issue them.
//
// A cache that evicts faster than a link drains builds a backlog. Handing SimGrid one Comm per evicted
// block would put thousands of flows on that link at once, and the flow solver's cost grows with the
// flows in flight (the simulation turned quadratic on the Mooncake sample). A real offload path has a
// worker per destination with a bounded queue; so here each (from, to) path has one transfer in flight,
// and bytes that arrive meanwhile wait and go together in the next one. The link carries the same bytes
// at the same rate; SimGrid sees one flow per path.
//
// The stores one cache call makes (an admission, a release, a capacity change) go as one batch per path:
// they are only queued while the call runs (add), and start together once it is over (start_idle). The
// GPU's TieredStore (hw/store/tiered_store.h) moves every copy of one cache call as one batched copy; a
// queue that started the first store at once would send it alone, and the rest as a second batch once it
// had landed, each batch paying the link's fixed latency, so the stores' times would differ from the GPU's.
//
// Each store still becomes its own row of transfers.csv (sim/core/transfer_log.h): it starts when the
// batch carrying it starts moving on the link, after its wait in the queue, and ends when that batch has
// landed. Stores still queued when the run ends never moved and have no row; batches in flight then are
// followed to their end (finish_in_flight).
//
// Asking SimGrid whether a batch has landed is a simcall, a round of its engine: pump() asks only once
// the batch could have landed, alone on its links (Platform::least_transfer_seconds). An instance ahead of
// SimGrid's clock (serving_instance.h) need not catch up for a pump that would only log batches: it
// defers the pump (defer_pump), and once SimGrid's clock has caught up, pump_deferred() finishes the
// batches each deferred pump would have found landed, in the order it would have.
#pragma once

#include <array>
#include <cstdint>
#include <simgrid/s4u.hpp>
#include <string>
#include <utility>
#include <vector>

#include "sim/core/transfer_log.h"
#include "sim/engine/simgrid/platform.h"

namespace kvtier {

class StoreQueues {
 public:
  // Finished stores are added to `log`; with none, stores are not kept one by one.
  StoreQueues(Platform& platform, TransfersCsvWriter* log) : platform_(platform), log_(log) {}

  // Queues `bytes` for the path between the media; `tier_path` and `cause` (the request it is for) name the
  // store in transfers.csv. Nothing starts: the store waits for start_idle(), or for the path's batch in
  // flight to land (pump).
  void add(Medium from, Medium to, const std::string& tier_path, double bytes, int64_t cause);
  // Starts the queued stores of every idle path, one batch per path. Call once a cache call is over,
  // before anything waits on the stores.
  void start_idle();
  // Logs the batch of every path whose transfer has finished and starts the next. Call at every engine
  // iteration.
  void pump();
  // Whether pump() at `now` would only log batches: no batch that could have landed by then has stores
  // queued behind it. If so, and fewer than kMostDeferredPumps wait, records the pump at `now` for
  // pump_deferred() and returns true.
  bool defer_pump(double now);
  // The pumps deferred so far, each as of its time, in their order. SimGrid's clock must have reached
  // them.
  void pump_deferred();
  // Whether a deferred pump may have found the path's batch landed: stores added to the path must wait
  // for pump_deferred(), or they would queue behind a batch that is over.
  bool landed_unpumped(Medium from, Medium to) const;
  // Waits for every batch in flight and logs it; queued stores are not started. For the end of the run,
  // from an actor, when nobody pumps any more.
  void finish_in_flight();
  // Whether a batch is in flight on any path (in_flight() not empty, without building it).
  bool moving() const;
  // Transfers in flight, for an idle engine to wait on.
  std::vector<simgrid::s4u::CommPtr> in_flight() const;
  // Whether start_idle() would start a batch: stores queued on a path with none in flight.
  bool idle_path_queued() const { return idle_queued_ != 0; }
  // The earliest time pump() could find a batch landed (infinity with none in flight).
  double earliest_landing_s() const;
  // When the earliest batch in flight started (infinity with none): no store logged from now on started
  // before it.
  double earliest_start_in_flight() const;
  int64_t transfers_started() const { return started_; }

 private:
  struct Path {
    double pending_bytes = 0;
    std::vector<TransferRecord> pending;  // stores waiting for the next batch; start_s unset
    std::vector<simgrid::s4u::CommPtr> comms;
    std::vector<TransferRecord> moving;  // the stores of the batch in flight; end_s unset
    double earliest_landing_s = 0;       // the batch in flight cannot have landed before
    bool may_have_landed_by(double at) const { return !comms.empty() && at >= earliest_landing_s; }
  };
  // Indexed by from × media + to: walked in that order, as a map by (from, to) would be.
  static constexpr size_t kPaths = kMedia.size() * kMedia.size();
  static size_t index(Medium from, Medium to) {
    return static_cast<size_t>(from) * kMedia.size() + static_cast<size_t>(to);
  }
  void start(size_t index, Path& path);
  // Logs the stores of the batch in flight, which landed at `landed_s`.
  void finish(Path& path, double landed_s);
  // When the last copy of the path's batch landed, by SimGrid's clock now; infinity while one moves.
  static double landed_s(const Path& path);

  Platform& platform_;
  TransfersCsvWriter* log_;
  std::array<Path, kPaths> paths_;
  // defer_pump()'s times, ascending; bounded, since an instance may run long on its own clock.
  static constexpr size_t kMostDeferredPumps = 64;
  std::vector<double> deferred_pumps_;
  uint32_t idle_queued_ = 0;  // bit i: paths_[i] has stores queued and no batch in flight
  static_assert(kPaths <= 32);
  int64_t started_ = 0;
};

}  // namespace kvtier
