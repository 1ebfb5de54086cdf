// One instance's share of a cluster's requests: the replay driver its scheduler reads, fed by the router.
//
// The router takes each request from the cluster's driver when it is ready and delivers it to the
// instance it chose; the instance issues it at once (its ready time is when it was routed). A completion
// goes back to the cluster's driver through `on_complete`, where a closed loop readies the session's next
// turn. The replay is over for the instance once the router has closed it and every request it delivered
// has completed.
//
// With disaggregation, a decode instance is chosen when the request arrives but receives it only once its
// prefill is done: `expect` counts it in the instance's load from the start, `withdraw` takes it back when
// it will never come.
#pragma once

#include <deque>
#include <functional>
#include <unordered_map>

#include "sim/cluster/router.h"
#include "sim/workload/replay.h"

namespace kvtier {

class RoutedDriver : public ReplayDriver {
 public:
  // Told of each request that leaves: completed, or rejected (never served).
  using CompletionHandler = std::function<void(uint64_t request_id, double now, bool rejected)>;

  explicit RoutedDriver(CompletionHandler on_complete) : on_complete_(std::move(on_complete)) {}

  // A request routed here at `now` (counted in the load already if it was expected).
  void deliver(Request request, double now);
  // A request that will be delivered later.
  void expect(const Request& request);
  // An expected request that will not be delivered after all.
  void withdraw(uint64_t request_id);
  // Nothing more will be routed here.
  void close() { closed_ = true; }
  // What the router reads: the requests delivered and not yet completed, and their tokens.
  const InstanceLoad& load() const { return load_; }

  std::optional<double> next_ready_time() const override;
  Request pop_ready() override;
  void on_complete(uint64_t request_id, double now) override { leave(request_id, now, false); }
  void on_reject(uint64_t request_id, double now) override { leave(request_id, now, true); }
  bool done() const override { return closed_ && load_.requests == 0; }
  // Completions in the window are the cluster driver's to count; here they stay 0.
  ReplayCounts counts() const override { return counts_; }

 private:
  void count(const Request& request);
  void uncount(uint64_t request_id);
  void leave(uint64_t request_id, double now, bool rejected);

  CompletionHandler on_complete_;
  std::deque<Request> inbox_;
  bool closed_ = false;
  InstanceLoad load_;  // every request delivered and not completed: the inbox's and those in flight
  std::unordered_map<uint64_t, int64_t> tokens_;  // of each request delivered or expected, until it leaves
  ReplayCounts counts_;
};

}  // namespace kvtier
