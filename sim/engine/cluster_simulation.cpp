#include "sim/engine/cluster_simulation.h"

#include <memory>
#include <simgrid/s4u.hpp>

#include "sim/cluster/handoff_ledger.h"
#include "sim/cluster/routed_driver.h"
#include "sim/cluster/router.h"
#include "sim/cluster/shared_pool.h"
#include "sim/core/checked_file.h"
#include "sim/engine/run_cost.h"
#include "sim/engine/simgrid/fabric.h"
#include "sim/engine/simgrid/kv_handoffs.h"
#include "sim/engine/simgrid/run_parts.h"
#include "sim/engine/workload.h"

namespace sg4 = simgrid::s4u;

namespace kvtier {
namespace {

// A request or a completion reaches the router, or a replica, at once: no bytes, no latency. (The
// payload means nothing, but SimGrid takes a comm without one for a receive.)
void ring(sg4::Mailbox* bell) {
  static int rung = 0;
  bell->put_init(&rung, 0)->detach();
}

// Hands one replica's cache events to the router, stamped with the time they happened.
class RouterFeed : public CacheEventSink {
 public:
  RouterFeed(Router& router, int instance) : router_(router), instance_(instance) {}
  void on_event(const CacheEvent& event) override {
    router_.on_cache_event(instance_, sg4::Engine::get_clock(), event);
  }

 private:
  Router& router_;
  int instance_;
};

// Per tier, whether a promotion moves the block out of it (the router cannot tell from the event).
std::vector<bool> exclusive_tiers(const Scenario& s) {
  std::vector<bool> exclusive;
  for (const TierSpec& t : s.tiers) exclusive.push_back(t.placement == Placement::kExclusive);
  return exclusive;
}

// How a replica is wired into the cluster: the router its cache events feed (as which of its instances),
// who is told when a request leaves it and of each record once final, the pool, and with
// disaggregation where received KV comes from and who watches its steps.
struct ReplicaWiring {
  Router* router = nullptr;
  int router_index = 0;
  RoutedDriver::CompletionHandler on_leave;
  std::function<void(const RequestRecord&)> on_record;
  SharedPool* pool = nullptr;
  std::function<std::vector<sg4::CommPtr>(uint64_t)> prefilled_kv;
  std::function<void(const StepPlan&, bool)> on_step;
};

// One replica: its cache, the driver the router feeds, its records and summary, its engine.
struct Replica {
  Replica(const Scenario& s, const CostModel& cost, int index, std::shared_ptr<const NodeZone> node,
          int first_gpu, const std::vector<std::string>& tiers, double window_s, ReplicaWiring wiring)
      : index(index),
        cache(s.tiers),
        platform(std::move(node), first_gpu, s.gpus),
        driver(std::move(wiring.on_leave)),
        summary(tiers, s.slo, window_s),
        records([this, on_record = std::move(wiring.on_record)](const RequestRecord& r) {
          summary.add(r);
          on_record(r);
        }),
        feed(*wiring.router, wiring.router_index),
        doorbell(sg4::Mailbox::by_name("instance" + std::to_string(index))) {
    InstanceConfig config = instance_config(s);
    if (wiring.router->follows_caches()) config.cache_observer = &feed;
    if (wiring.pool != nullptr) {  // the tier after the instance's own, on the remote medium
      config.shared_tier = wiring.pool;
      config.tier_media.push_back(Medium::kRemote);
      config.tier_names.push_back(wiring.pool->spec().name);
    }
    config.prefilled_kv = std::move(wiring.prefilled_kv);
    config.on_step = std::move(wiring.on_step);
    engine =
        std::make_unique<ServingInstance>(std::move(config), cost, platform, cache, driver, records, nullptr);
    engine->listen(doorbell);
  }

  int index;
  TieredCache cache;
  Platform platform;
  RoutedDriver driver;
  RequestSummary summary;
  RequestLog records;
  RouterFeed feed;
  sg4::Mailbox* doorbell;
  std::unique_ptr<ServingInstance> engine;
};

using Replicas = std::vector<std::unique_ptr<Replica>>;

// The router's actor: routes each request of the workload when it is ready (`dispatch` delivers it and
// returns the replica to wake), waking for the next arrival or for a completion (which may ready a closed
// loop's next turn). Every request ready at one time is delivered before a replica is rung (ringing
// yields to the other actors, and a replica woken early would start a step without the rest). When the
// workload is over, it closes every replica's driver and rings each, so that they stop.
void route_requests(ReplayDriver& workload, const std::function<int(Request, double)>& dispatch,
                    Replicas& replicas, sg4::Mailbox* bell) {
  std::vector<bool> delivered(replicas.size(), false);
  sg4::CommPtr woken;
  void* payload = nullptr;
  while (true) {
    const double now = sg4::Engine::get_clock();
    std::optional<double> next = workload.next_ready_time();
    for (; next && *next <= now; next = workload.next_ready_time())
      delivered[dispatch(workload.pop_ready(), now)] = true;
    for (size_t i = 0; i < replicas.size(); ++i) {
      if (delivered[i]) ring(replicas[i]->doorbell);
      delivered[i] = false;
    }
    if (workload.done()) break;
    if (!woken) woken = bell->get_async(&payload);
    if (sg4::Comm::wait_any_for({woken}, next ? *next - now : -1) == 0) woken = nullptr;
  }
  for (auto& replica : replicas) {
    replica->driver.close();
    ring(replica->doorbell);
  }
}

// The replicas and how requests reach them: one router over all of them or, with disaggregation, one over
// the prefill replicas (the first ones) and one over the decode replicas, and the KV handed off between
// them. Every request's final record goes to `final` with the instance that served it (its decode
// instance) and the one that prefilled it (-1 without disaggregation).
class Deployment {
 public:
  using FinalRecord = std::function<void(const RequestRecord&, int instance, int prefill_instance)>;
  Deployment(const Scenario& s, const CostModel& cost,
             const std::vector<std::shared_ptr<const NodeZone>>& nodes, const std::vector<std::string>& tiers,
             double window_s, SharedPool* pool, Fabric* fabric, ReplayDriver& workload,
             sg4::Mailbox* router_bell, FinalRecord final);

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
  sg4::Mailbox* router_bell_;
  int prefill_instances_ = 0;  // 0 without disaggregation
  std::vector<std::unique_ptr<Router>> routers_;
  std::vector<InstanceLoad> loads_;
  struct Held {
    Request request;  // whole, with its output tokens
    int decode = 0;
  };
  std::unordered_map<uint64_t, Held> held_;  // requests being prefilled, for their decode replica
};

Deployment::Deployment(const Scenario& s, const CostModel& cost,
                       const std::vector<std::shared_ptr<const NodeZone>>& nodes,
                       const std::vector<std::string>& tiers, double window_s, SharedPool* pool,
                       Fabric* fabric, ReplayDriver& workload, sg4::Mailbox* router_bell, FinalRecord final)
    : workload_(workload), router_bell_(router_bell) {
  const ClusterSpec& cluster = *s.cluster;
  if (cluster.disaggregation) prefill_instances_ = cluster.disaggregation->prefill_instances;
  const int first_group = prefill_instances_ > 0 ? prefill_instances_ : cluster.instances;
  routers_.push_back(std::make_unique<Router>(cluster.router, first_group, exclusive_tiers(s)));
  if (prefill_instances_ > 0) {
    routers_.push_back(
        std::make_unique<Router>(cluster.router, cluster.instances - prefill_instances_, exclusive_tiers(s)));
    std::vector<KvHandoffs::Place> places;
    for (int i = 0; i < cluster.instances; ++i)
      places.push_back({i / cluster.instances_per_node, (i % cluster.instances_per_node) * s.gpus});
    handoffs = std::make_unique<KvHandoffs>(*fabric, std::move(places), s.gpus, cost.kv_bytes_per_token(),
                                            s.model.layers, cluster.disaggregation->layerwise);
    ledger = std::make_unique<HandoffLedger>(final);
  }
  for (int i = 0; i < cluster.instances; ++i) {
    const bool prefills = i < prefill_instances_;
    const bool decodes = prefill_instances_ > 0 && !prefills;
    ReplicaWiring w;
    w.router = routers_[decodes ? 1 : 0].get();
    w.router_index = decodes ? i - prefill_instances_ : i;
    w.on_leave = leave_handler(i);
    w.pool = pool;
    if (prefills) {
      w.on_record = [this](const RequestRecord& r) { ledger->prefill_settled(r); };
      if (handoffs->layerwise())
        w.on_step = [this](const StepPlan& step, bool ran) { handoffs->on_prefill_step(step, ran); };
    } else if (decodes) {
      w.on_record = [this](const RequestRecord& r) { ledger->decode_settled(r); };
      w.prefilled_kv = [this](uint64_t id) { return handoffs->received(id); };
    } else {
      w.on_record = [final, i](const RequestRecord& r) { final(r, i, -1); };
    }
    const int node = i / cluster.instances_per_node;
    replicas.push_back(std::make_unique<Replica>(
        s, cost, i, nodes[node], (i % cluster.instances_per_node) * s.gpus, tiers, window_s, std::move(w)));
  }
}

RoutedDriver::CompletionHandler Deployment::leave_handler(int index) {
  if (index < prefill_instances_)
    return [this](uint64_t id, double now, bool rejected) { hand_off(id, now, rejected); };
  return [this](uint64_t id, double now, bool) {
    workload_.on_complete(id, now);
    ring(router_bell_);
  };
}

int Deployment::dispatch(Request request, double now) {
  loads_.clear();
  for (const auto& replica : replicas) loads_.push_back(replica->driver.load());
  if (prefill_instances_ == 0) {
    const int chosen = routers_[0]->route(request, now, loads_);
    replicas[chosen]->driver.deliver(std::move(request), now);
    return chosen;
  }
  const std::span<const InstanceLoad> loads(loads_);
  const int prefill = routers_[0]->route(request, now, loads.first(prefill_instances_));
  const int decode = prefill_instances_ + routers_[1]->route(request, now, loads.subspan(prefill_instances_));
  handoffs->expect(request.id, prefill, decode);
  ledger->route(request.id, prefill, decode);
  replicas[decode]->driver.expect(request);
  Request first_token = request;  // the prefill replica serves the prompt and its first token
  first_token.output_tokens = 1;
  held_.emplace(request.id, Held{std::move(request), decode});
  replicas[prefill]->driver.deliver(std::move(first_token), now);
  return prefill;
}

// A request leaves its prefill replica: its KV goes to its decode replica, and the request with it, or,
// rejected, it leaves the cluster.
void Deployment::hand_off(uint64_t id, double now, bool rejected) {
  auto it = held_.find(id);
  Held held = std::move(it->second);
  held_.erase(it);
  Replica& decode = *replicas[held.decode];
  if (rejected) {
    decode.driver.withdraw(id);
    handoffs->forget(id);
    workload_.on_complete(id, now);
    ring(router_bell_);
    return;
  }
  handoffs->prefilled(id, held.request.input_tokens);
  held.request.prefilled_elsewhere = true;
  decode.driver.deliver(std::move(held.request), now);
  ring(decode.doorbell);
}

// Every link of the cluster: each node's (`n0.dram`, ...), each carrying what its replicas moved, then
// with a pool its NICs (fabric.h), and everything the pool moved on any of them.
class ClusterLinks {
 public:
  ClusterLinks(const std::vector<std::vector<Replica*>>& by_node, Fabric* pool)
      : by_node_(by_node), pool_(pool) {
    if (pool_ != nullptr) {  // the nodes' links, then the network's
      names_ = pool_->link_names();
      return;
    }
    for (const std::vector<Replica*>& node : by_node_) {
      const std::vector<std::string>& names = node.front()->platform.link_names();
      names_.insert(names_.end(), names.begin(), names.end());
    }
  }
  const std::vector<std::string>& names() const { return names_; }
  double bandwidth(size_t l) const {
    if (pool_ != nullptr) return pool_->bandwidth(l);
    const size_t per_node = by_node_.front().front()->platform.link_names().size();
    return by_node_[l / per_node].front()->platform.bandwidth(l % per_node);
  }
  std::vector<double> started_bytes() const {
    return total([](Replica& r) { return r.platform.link_bytes(); },
                 pool_ ? pool_->link_bytes() : std::vector<double>{});
  }
  std::vector<double> carried_bytes() {
    return total([](Replica& r) { return r.platform.carried_bytes(); },
                 pool_ ? pool_->carried_bytes() : std::vector<double>{});
  }

 private:
  template <typename Read>
  std::vector<double> total(Read read, std::vector<double> from_pool) const {
    std::vector<double> bytes(names_.size(), 0);
    for (size_t l = 0; l < from_pool.size(); ++l) bytes[l] = from_pool[l];
    size_t offset = 0;
    for (const std::vector<Replica*>& node : by_node_) {
      for (Replica* r : node) {
        const std::vector<double> mine = read(*r);
        for (size_t l = 0; l < mine.size(); ++l) bytes[offset + l] += mine[l];
      }
      offset += node.front()->platform.link_names().size();
    }
    return bytes;
  }

  const std::vector<std::vector<Replica*>>& by_node_;
  Fabric* pool_;
  std::vector<std::string> names_;
};

// The cluster's state every interval: queues and HBM summed over replicas, the hit rate per tier (the
// pool's included) over every replica's admissions, and the cluster's links. It stops when `over` rings,
// when the last replica has stopped. (It is not a daemon that the engine kills at the end: under
// AddressSanitizer, the exception that kills an actor on SimGrid's swapped stacks trips a false stack
// overflow in the sanitizer's own frame.)
void sample_cluster(const Scenario& s, Replicas& replicas, ClusterLinks& cluster_links, size_t tiers,
                    sg4::Mailbox* over, const std::function<void(const TimeSample&)>& taken) {
  LinkSampler links([&] { return cluster_links.carried_bytes(); },
                    [&](size_t l) { return cluster_links.bandwidth(l); });
  void* payload = nullptr;
  const sg4::CommPtr rung = over->get_async(&payload);
  while (sg4::Comm::wait_any_for({rung}, s.sample_interval_s) != 0) {
    const double now = sg4::Engine::get_clock();
    TimeSample total;
    total.time_s = now;
    std::vector<int64_t> hits(tiers, 0);
    int64_t input = 0;
    for (auto& replica : replicas) {
      InstanceState& state = replica->engine->state();
      for (size_t t = 0; t < tiers; ++t) hits[t] += state.hits_since_sample[t];
      input += state.input_since_sample;
      TimeSample one = sample_state(now, replica->cache, state);
      total.hbm_used_bytes += one.hbm_used_bytes;
      total.hbm_cache_bytes += one.hbm_cache_bytes;
      total.queued += one.queued;
      total.running += one.running;
    }
    for (size_t t = 0; t < tiers; ++t)
      total.tier_hit_rate.push_back(input > 0 ? static_cast<double>(hits[t]) / static_cast<double>(input)
                                              : 0);
    total.link_utilisation = links.utilisation(now);
    taken(total);
  }
}

// The cluster's requests.csv and timeseries.csv, written as the run goes.
struct ClusterFiles {
  ClusterFiles(const std::string& dir, const std::vector<std::string>& tiers,
               const std::vector<std::string>& links, RequestsCsvWriter::RouteColumns route_columns)
      : requests_file(dir + "/requests.csv"),
        series_file(dir + "/timeseries.csv"),
        requests(requests_file, tiers, route_columns),
        series(series_file, links, tiers) {}
  CheckedFile requests_file, series_file;
  RequestsCsvWriter requests;
  TimeseriesCsvWriter series;
};

nlohmann::json router_json(const RouterConfig& r) {
  return {{"policy", router_policy_name(r.policy)},
          {"prefill_weight", r.prefill_weight},
          {"staleness_s", r.staleness_s}};
}

nlohmann::json pool_json(const SharedPool& pool) {
  return {{"name", pool.spec().name},
          {"bytes_per_block", pool.spec().bytes_per_block()},
          {"capacity_blocks", pool.capacity_blocks()},
          {"used_blocks", pool.used_blocks()},
          {"stored_blocks", pool.stored_blocks()},
          {"evicted_blocks", pool.evicted_blocks()},
          {"hit_blocks", pool.hit_blocks()}};
}

}  // namespace

nlohmann::json simulate_cluster(const Scenario& s, const SimulationOptions& options) {
  const std::unique_ptr<sg4::Engine> engine = quiet_engine();
  const ClusterSpec& cluster = *s.cluster;
  const HardwareConfig hardware = platform_hardware(s, options.free_transfers);

  // Every node in one zone, and the router's host and every node's one link away from each node, with
  // neither latency nor a limit that a message of no bytes would feel (the router and a prefill replica
  // ring replicas elsewhere).
  sg4::NetZone* zone = sg4::create_full_zone("cluster");
  std::vector<std::shared_ptr<const NodeZone>> nodes;
  sg4::Host* router_host = zone->create_host("router", 1.0)->seal();
  sg4::Link* router_link = zone->create_link("router", 1e30)->seal();
  for (int n = 0; n < cluster.nodes(); ++n) {
    std::string prefix = "n";  // built in steps: GCC 12 misreads "n" + to_string(n) + "." (-Wrestrict)
    prefix += std::to_string(n);
    prefix += '.';
    nodes.push_back(std::make_shared<const NodeZone>(zone, hardware, hardware.gpu.count, prefix));
    std::vector<sg4::Host*> callers = {router_host};
    for (size_t other = 0; cluster.disaggregation && other + 1 < nodes.size(); ++other)
      callers.push_back(nodes[other]->dram());
    for (sg4::Host* from : callers) {
      zone->add_route(from->get_netpoint(), nodes.back()->dram()->get_netpoint(), nullptr, nullptr,
                      {sg4::LinkInRoute(router_link)}, true);
    }
  }
  std::unique_ptr<Fabric> network;
  if (cluster.pool || cluster.disaggregation) {
    std::vector<std::shared_ptr<const NodeZone>> fabric_nodes = nodes;  // the serving nodes, then the pool's
    for (int p = 0; cluster.pool && p < cluster.pool_nodes; ++p) {
      std::string prefix = "p";  // in steps, as the serving nodes' (-Wrestrict)
      prefix += std::to_string(p);
      prefix += '.';
      fabric_nodes.push_back(std::make_shared<const NodeZone>(zone, hardware, 0, prefix));
    }
    network = std::make_unique<Fabric>(
        zone, std::move(fabric_nodes), hardware,
        FabricLayout{cluster.network.nodes_per_leaf, cluster.network.uplink,
                     cluster.disaggregation.has_value(), cluster.pool_nodes, cluster.pool_medium});
  }
  std::unique_ptr<SharedPool> pool;
  if (cluster.pool) pool = std::make_unique<SharedPool>(*cluster.pool);
  zone->seal();

  WorkloadPlan workload =
      options.recorded_arrivals ? build_recorded_workload(s, *options.recorded_arrivals) : build_workload(s);
  const CostModel cost = instance_cost_model(s);
  std::vector<std::string> tiers = tier_names(s);
  if (pool) tiers.push_back(pool->spec().name);
  std::unique_ptr<ClusterFiles> files;
  RequestSummary total(tiers, s.slo, workload.window_s);
  auto record = [&](const RequestRecord& r, int instance, int prefill_instance) {
    total.add(r);
    if (files) files->requests.write(r, instance, prefill_instance);
  };
  sg4::Mailbox* router_bell = sg4::Mailbox::by_name("router");
  Deployment deployment(s, cost, nodes, tiers, workload.window_s, pool.get(), network.get(), *workload.driver,
                        router_bell, record);
  Replicas& replicas = deployment.replicas;
  std::vector<std::vector<Replica*>> by_node(nodes.size());
  for (auto& replica : replicas) {
    const int node = replica->index / cluster.instances_per_node;
    if (pool) replica->platform.use_pool(network.get(), node);
    by_node[node].push_back(replica.get());
  }
  ClusterLinks links(by_node, network.get());
  if (!options.out_dir.empty()) {
    create_checked_folder(options.out_dir);
    files =
        std::make_unique<ClusterFiles>(options.out_dir, tiers, links.names(),
                                       cluster.disaggregation ? RequestsCsvWriter::RouteColumns::kHandoff
                                                              : RequestsCsvWriter::RouteColumns::kInstance);
  }

  std::optional<ProgressLine> progress;
  if (options.progress)
    progress.emplace(
        *options.progress,
        ProgressGoal{workload.requests, std::min(workload.window_s, options.progress->arrivals_end_s)});
  auto so_far = [&] {
    int64_t events = 0;
    for (auto& r : replicas) {
      const InstanceState& st = r->engine->state();
      events +=
          st.steps + st.transfers + r->engine->store_transfers() + static_cast<int64_t>(r->records.size());
    }
    return ProgressCount{sg4::Engine::get_clock(), total.requests_added(),
                         events + total.requests_completed()};
  };
  sg4::Mailbox* run_over = sg4::Mailbox::by_name("sampler");
  int running = cluster.instances;
  auto dispatch = [&](Request request, double now) { return deployment.dispatch(std::move(request), now); };
  sg4::Actor::create("router", router_host,
                     [&] { route_requests(*workload.driver, dispatch, replicas, router_bell); });
  for (auto& replica : replicas) {
    Replica* r = replica.get();
    sg4::Actor::create("instance" + std::to_string(r->index), r->platform.node().dram(), [&, r] {
      if (progress) {
        r->engine->run([&] { progress->update(so_far); });
      } else {
        r->engine->run();
      }
      if (--running == 0) ring(run_over);
    });
  }
  sg4::Actor::create("sampler", router_host, [&] {
    sample_cluster(s, replicas, links, tiers.size(), run_over, [&](const TimeSample& t) {
      if (files) files->series.write(t);
    });
  });
  engine->run();
  for (auto& replica : replicas) replica->records.close();
  if (files) {
    files->requests_file.close();
    files->series_file.close();
  }
  const double end_s = sg4::Engine::get_clock();

  TrafficTotals traffic(static_cast<int>(s.tiers.size()));
  nlohmann::json instances = nlohmann::json::array();
  int64_t steps = 0, transfers = 0;
  double busy_s = 0;
  for (auto& r : replicas) {
    const InstanceState& st = r->engine->state();
    steps += st.steps;
    transfers += st.transfers + r->engine->store_transfers();
    busy_s += st.busy_s;
    traffic.add(r->cache.traffic());
    nlohmann::json one = r->summary.to_json(r->platform.link_names(), r->platform.link_bytes());
    one["instance"] = r->index;
    one["node"] = r->index / cluster.instances_per_node;
    if (cluster.disaggregation)
      one["role"] = r->index < cluster.disaggregation->prefill_instances ? "prefill" : "decode";
    one["engine_steps"] = st.steps;
    one["gpu_busy_s"] = st.busy_s;
    one["cache_traffic"] = cache_traffic_json(r->cache);
    instances.push_back(std::move(one));
  }
  nlohmann::json summary = total.to_json(links.names(), links.started_bytes());
  add_run_totals(summary, s, workload,
                 {end_s, steps, transfers, busy_s, cache_traffic_json(traffic, tier_names(s))});
  summary["deployment"] = {{"instances", cluster.instances},
                           {"nodes", cluster.nodes()},
                           {"instances_per_node", cluster.instances_per_node},
                           {"gpus_per_instance", s.gpus},
                           {"router", router_json(cluster.router)}};
  if (cluster.disaggregation) {
    const int prefill = cluster.disaggregation->prefill_instances;
    summary["deployment"]["disaggregation"] = {
        {"prefill_instances", prefill},
        {"decode_instances", cluster.instances - prefill},
        {"kv_transfer", cluster.disaggregation->layerwise ? "layerwise" : "whole"}};
    summary["handoff"] = {{"requests", deployment.handoffs->requests()},
                          {"bytes", deployment.handoffs->bytes()},
                          {"handoff_s", percentiles(deployment.ledger->handoff_s())},
                          {"ttft_share", deployment.ledger->ttft_share()}};
  }
  if (pool) summary["pool"] = pool_json(*pool);
  if (s.cost)
    summary["cost"] =
        run_cost_json(s, *s.cost, run_usage(summary, links.names(), links.started_bytes(), busy_s));
  summary["instances"] = std::move(instances);
  if (progress) {
    progress->finish({end_s, summary["requests_issued"].get<int64_t>(), summary["events"].get<int64_t>()});
  }
  return summary;
}

}  // namespace kvtier
