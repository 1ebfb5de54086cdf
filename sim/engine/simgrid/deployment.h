// A cluster's replicas and how requests reach them: each replica's cache, driver, records and SimGrid
// serving engine, wired to the router that feeds it; the routers (one, or with disaggregation one over the
// prefill replicas and one over the decode replicas); and with disaggregation the KV handed from one to
// the other. The cluster's simulation (cluster_simulation.cpp) builds one and runs its replicas' engines.
#pragma once

#include <functional>
#include <memory>
#include <simgrid/s4u.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/cluster/handoff_ledger.h"
#include "sim/cluster/routed_driver.h"
#include "sim/cluster/router.h"
#include "sim/cluster/shared_pool.h"
#include "sim/engine/metrics.h"
#include "sim/engine/scenario.h"
#include "sim/engine/simgrid/fabric.h"
#include "sim/engine/simgrid/kv_handoffs.h"
#include "sim/engine/simgrid/serving_instance.h"

namespace kvtier {

// A request or a completion reaches the router, or a replica, at once: no bytes, no latency.
void ring(simgrid::s4u::Mailbox* bell);

// Hands one replica's cache events to the router, stamped with the time they happened.
class RouterFeed : public CacheEventSink {
 public:
  RouterFeed(Router& router, int instance) : router_(router), instance_(instance) {}
  void on_event(const CacheEvent& event) override {
    router_.on_cache_event(instance_, simgrid::s4u::Engine::get_clock(), event);
  }

 private:
  Router& router_;
  int instance_;
};

// How a replica is wired into the cluster: the router its cache events feed (as which of its instances),
// who is told when a request leaves it and of each record once final, the pool, and with
// disaggregation where received KV comes from and who watches its steps.
struct ReplicaWiring {
  Router* router = nullptr;
  int router_index = 0;
  RoutedDriver::CompletionHandler on_leave;
  std::function<void(const RequestRecord&)> on_record;
  SharedPool* pool = nullptr;
  std::function<std::vector<simgrid::s4u::CommPtr>(uint64_t)> prefilled_kv;
  std::function<void(const StepPlan&, bool)> on_step;
  TransfersCsvWriter* transfers = nullptr;  // its transfers.csv, if any
};

// One replica: its cache, the driver the router feeds, its records and summary, its engine.
struct Replica {
  Replica(const Scenario& s, const CostModel& cost, int index, std::shared_ptr<const NodeZone> node,
          int first_gpu, const std::vector<std::string>& tiers, double window_s, ReplicaWiring wiring);

  int index;
  TieredCache cache;
  Platform platform;
  RoutedDriver driver;
  RequestSummary summary;
  RequestLog records;
  RouterFeed feed;
  simgrid::s4u::Mailbox* doorbell;
  std::unique_ptr<ServingInstance> engine;
};

using Replicas = std::vector<std::unique_ptr<Replica>>;

// The replicas and how requests reach them: one router over all of them or, with disaggregation, one over
// the prefill replicas (the first ones) and one over the decode replicas, and the KV handed off between
// them. Every request's final record goes to `final` with the instance that served it (its decode
// instance) and the one that prefilled it (-1 without disaggregation); replica k's transfers go to
// `transfers[k]`, if given.
class Deployment {
 public:
  using FinalRecord = std::function<void(const RequestRecord&, int instance, int prefill_instance)>;
  Deployment(const Scenario& s, const CostModel& cost,
             const std::vector<std::shared_ptr<const NodeZone>>& nodes, const std::vector<std::string>& tiers,
             double window_s, SharedPool* pool, Fabric* fabric, ReplayDriver& workload,
             simgrid::s4u::Mailbox* router_bell, FinalRecord final,
             const std::vector<TransfersCsvWriter*>& transfers);

  // Routes a request ready at `now` and delivers it; returns the replica to wake.
  int dispatch(Request request, double now);

  Replicas replicas;
  std::unique_ptr<KvHandoffs> handoffs;
  std::unique_ptr<HandoffLedger> ledger;

 private:
  // What a replica does when a request leaves it: the workload learns of it (and the router wakes), or
  // with disaggregation a prefilled request goes on to its decode replica.
  RoutedDriver::CompletionHandler leave_handler(int index);
  void hand_off(uint64_t id, double now, bool rejected);

  ReplayDriver& workload_;
  simgrid::s4u::Mailbox* router_bell_;
  int prefill_instances_ = 0;  // 0 without disaggregation
  std::vector<std::unique_ptr<Router>> routers_;
  std::vector<InstanceLoad> loads_;
  struct Held {
    Request request;  // whole, with its output tokens
    int decode = 0;
  };
  std::unordered_map<uint64_t, Held> held_;  // requests being prefilled, for their decode replica
};

}  // namespace kvtier
