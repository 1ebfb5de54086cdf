// One instance's share of a cluster's requests: the replay driver its scheduler reads, fed by the router.
//
// The router takes each request from the cluster's driver when it is ready and delivers it to the
// instance it chose; the instance issues it at once (its ready time is when it was routed). A completion
// goes back to the cluster's driver through `on_complete`, where a closed loop readies the session's next
// turn. The replay is over for the instance once the router has closed it and every request it delivered
// has completed.
#pragma once

#include <deque>
#include <functional>
#include <unordered_map>

#include "sim/cluster/router.h"
#include "sim/workload/replay.h"

namespace kvtier {

class RoutedDriver : public ReplayDriver {
 public:
  using CompletionHandler = std::function<void(uint64_t request_id, double now)>;

  explicit RoutedDriver(CompletionHandler on_complete) : on_complete_(std::move(on_complete)) {}

  // A request routed here at `now`.
  void deliver(Request request, double now);
  // Nothing more will be routed here.
  void close() { closed_ = true; }
  // What the router reads: the requests delivered and not yet completed, and their tokens.
  const InstanceLoad& load() const { return load_; }

  std::optional<double> next_ready_time() const override;
  Request pop_ready() override;
  void on_complete(uint64_t request_id, double now) override;
  bool done() const override { return closed_ && load_.requests == 0; }
  // Completions in the window are the cluster driver's to count; here they stay 0.
  ReplayCounts counts() const override { return counts_; }

 private:
  CompletionHandler on_complete_;
  std::deque<Request> inbox_;
  bool closed_ = false;
  InstanceLoad load_;  // every request delivered and not completed: the inbox's and those in flight
  std::unordered_map<uint64_t, int64_t> tokens_;  // of each request delivered, until it completes
  ReplayCounts counts_;
};

}  // namespace kvtier
