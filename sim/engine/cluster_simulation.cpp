#include "sim/engine/cluster_simulation.h"

#include <memory>
#include <simgrid/s4u.hpp>

#include "sim/core/checked_file.h"
#include "sim/engine/run_cost.h"
#include "sim/engine/simgrid/deployment.h"
#include "sim/engine/simgrid/run_parts.h"
#include "sim/engine/workload.h"

namespace sg4 = simgrid::s4u;

namespace kvtier {
namespace {
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

// A replica's own summary, with where it runs and what its engine did.
nlohmann::json replica_json(Replica& r, const ClusterSpec& cluster) {
  const InstanceState& st = r.engine->state();
  nlohmann::json one = r.summary.to_json(r.platform.link_names(), r.platform.link_bytes());
  one["instance"] = r.index;
  one["node"] = r.index / cluster.instances_per_node;
  if (cluster.disaggregation)
    one["role"] = r.index < cluster.disaggregation->prefill_instances ? "prefill" : "decode";
  one["engine_steps"] = st.steps;
  one["gpu_busy_s"] = st.busy_s;
  one["cache_traffic"] = cache_traffic_json(r.cache);
  return one;
}

// summary.json's `deployment` and, with disaggregation, `handoff`.
void add_deployment(nlohmann::json& summary, const Scenario& s, Deployment& deployment) {
  const ClusterSpec& cluster = *s.cluster;
  summary["deployment"] = {{"instances", cluster.instances},
                           {"nodes", cluster.nodes()},
                           {"instances_per_node", cluster.instances_per_node},
                           {"gpus_per_instance", s.gpus},
                           {"router", router_json(cluster.router)}};
  if (!cluster.disaggregation) return;
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

nlohmann::json pool_json(const SharedPool& pool) {
  return {{"name", pool.spec().name},
          {"bytes_per_block", pool.spec().bytes_per_block()},
          {"capacity_blocks", pool.capacity_blocks()},
          {"used_blocks", pool.used_blocks()},
          {"stored_blocks", pool.stored_blocks()},
          {"evicted_blocks", pool.evicted_blocks()},
          {"hit_blocks", pool.hit_blocks()}};
}

// The cluster's hosts and links. Every node in one zone, and the router's host and every node's one link
// away from each node, with neither latency nor a limit that a message of no bytes would feel (the router
// and a prefill replica ring replicas elsewhere); with a pool or disaggregation, the network between the
// nodes (and the pool's).
struct ClusterPlatform {
  std::vector<std::shared_ptr<const NodeZone>> nodes;
  sg4::Host* router_host = nullptr;
  std::unique_ptr<Fabric> network;
};

ClusterPlatform build_platform(const ClusterSpec& cluster, const HardwareConfig& hardware) {
  ClusterPlatform platform;
  sg4::NetZone* zone = sg4::create_full_zone("cluster");
  std::vector<std::shared_ptr<const NodeZone>>& nodes = platform.nodes;
  platform.router_host = zone->create_host("router", 1.0)->seal();
  sg4::Link* router_link = zone->create_link("router", 1e30)->seal();
  for (int n = 0; n < cluster.nodes(); ++n) {
    std::string prefix = "n";  // built in steps: GCC 12 misreads "n" + to_string(n) + "." (-Wrestrict)
    prefix += std::to_string(n);
    prefix += '.';
    nodes.push_back(std::make_shared<const NodeZone>(zone, hardware, hardware.gpu.count, prefix));
    std::vector<sg4::Host*> callers = {platform.router_host};
    for (size_t other = 0; cluster.disaggregation && other + 1 < nodes.size(); ++other)
      callers.push_back(nodes[other]->dram());
    for (sg4::Host* from : callers) {
      zone->add_route(from->get_netpoint(), nodes.back()->dram()->get_netpoint(), nullptr, nullptr,
                      {sg4::LinkInRoute(router_link)}, true);
    }
  }
  if (cluster.pool || cluster.disaggregation) {
    std::vector<std::shared_ptr<const NodeZone>> fabric_nodes = nodes;  // the serving nodes, then the pool's
    for (int p = 0; cluster.pool && p < cluster.pool_nodes; ++p) {
      std::string prefix = "p";  // in steps, as the serving nodes' (-Wrestrict)
      prefix += std::to_string(p);
      prefix += '.';
      fabric_nodes.push_back(std::make_shared<const NodeZone>(zone, hardware, 0, prefix));
    }
    platform.network = std::make_unique<Fabric>(
        zone, std::move(fabric_nodes), hardware,
        FabricLayout{cluster.network.nodes_per_leaf, cluster.network.uplink,
                     cluster.disaggregation.has_value(), cluster.pool_nodes, cluster.pool_medium});
  }
  zone->seal();
  return platform;
}

// Each replica's transfers.csv, as a lone instance's, in OUT/transfers/ (opt-out: a row per stored block).
// REQUIRES: the output folder, when there is one, exists.
std::vector<std::unique_ptr<TransfersFile>> open_transfer_files(const SimulationOptions& options,
                                                                int instances) {
  std::vector<std::unique_ptr<TransfersFile>> files;
  if (options.out_dir.empty() || !options.transfers_csv) return files;
  create_checked_folder(options.out_dir + "/transfers");
  for (int i = 0; i < instances; ++i) {
    std::string path = options.out_dir;  // in steps (-Wrestrict)
    path += "/transfers/instance-";
    path += std::to_string(i);
    path += ".csv";
    files.push_back(std::make_unique<TransfersFile>(path));
  }
  return files;
}

// The replicas of each node; with `pool_network`, each replica's platform reaches the pool through it.
std::vector<std::vector<Replica*>> replicas_by_node(Replicas& replicas, const ClusterSpec& cluster,
                                                    Fabric* pool_network) {
  std::vector<std::vector<Replica*>> by_node(static_cast<size_t>(cluster.nodes()));
  for (auto& replica : replicas) {
    const int node = replica->index / cluster.instances_per_node;
    if (pool_network != nullptr) replica->platform.use_pool(pool_network, node);
    by_node[static_cast<size_t>(node)].push_back(replica.get());
  }
  return by_node;
}

// The replicas' steps, transfers and requests issued so far, as the summary counts events (completions
// are the caller's).
int64_t engine_events(Replicas& replicas) {
  int64_t events = 0;
  for (auto& r : replicas) {
    const InstanceState& st = r->engine->state();
    events +=
        st.steps + st.transfers + r->engine->store_transfers() + static_cast<int64_t>(r->records.size());
  }
  return events;
}

// The run's totals over the replicas, and summary.json.
nlohmann::json cluster_summary(const Scenario& s, const WorkloadPlan& workload, Deployment& deployment,
                               RequestSummary& total, ClusterLinks& links, const SharedPool* pool,
                               double end_s) {
  TrafficTotals traffic(static_cast<int>(s.tiers.size()));
  nlohmann::json instances = nlohmann::json::array();
  int64_t steps = 0, transfers = 0;
  double busy_s = 0;
  for (auto& r : deployment.replicas) {
    const InstanceState& st = r->engine->state();
    steps += st.steps;
    transfers += st.transfers + r->engine->store_transfers();
    busy_s += st.busy_s;
    traffic.add(r->cache.traffic());
    instances.push_back(replica_json(*r, *s.cluster));
  }
  nlohmann::json summary = total.to_json(links.names(), links.started_bytes());
  add_run_totals(summary, s, workload,
                 {end_s, steps, transfers, busy_s, cache_traffic_json(traffic, tier_names(s))});
  add_deployment(summary, s, deployment);
  if (pool) summary["pool"] = pool_json(*pool);
  if (s.cost)
    summary["cost"] =
        run_cost_json(s, *s.cost, run_usage(summary, links.names(), links.started_bytes(), busy_s));
  summary["instances"] = std::move(instances);
  return summary;
}

}  // namespace

nlohmann::json simulate_cluster(const Scenario& s, const SimulationOptions& options) {
  const std::unique_ptr<sg4::Engine> engine = quiet_engine();
  const ClusterSpec& cluster = *s.cluster;
  const ClusterPlatform platform = build_platform(cluster, platform_hardware(s, options.free_transfers));
  const std::vector<std::shared_ptr<const NodeZone>>& nodes = platform.nodes;
  Fabric* network = platform.network.get();
  std::unique_ptr<SharedPool> pool;
  if (cluster.pool) pool = std::make_unique<SharedPool>(*cluster.pool);

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
  if (!options.out_dir.empty()) create_checked_folder(options.out_dir);
  const std::vector<std::unique_ptr<TransfersFile>> transfer_files =
      open_transfer_files(options, cluster.instances);
  std::vector<TransfersCsvWriter*> transfer_logs;
  for (const auto& file : transfer_files) transfer_logs.push_back(&file->log);
  sg4::Mailbox* router_bell = sg4::Mailbox::by_name("router");
  Deployment deployment(s, cost, nodes, tiers, workload.window_s, pool.get(), network, *workload.driver,
                        router_bell, record, transfer_logs);
  Replicas& replicas = deployment.replicas;
  const std::vector<std::vector<Replica*>> by_node =
      replicas_by_node(replicas, cluster, pool ? network : nullptr);
  ClusterLinks links(by_node, network);
  if (!options.out_dir.empty()) {
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
    return ProgressCount{sg4::Engine::get_clock(), total.requests_added(),
                         engine_events(replicas) + total.requests_completed()};
  };
  sg4::Mailbox* run_over = sg4::Mailbox::by_name("sampler");
  int running = cluster.instances;
  auto dispatch = [&](Request request, double now) { return deployment.dispatch(std::move(request), now); };
  sg4::Actor::create("router", platform.router_host,
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
  sg4::Actor::create("sampler", platform.router_host, [&] {
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
  for (auto& file : transfer_files) file->close();
  const double end_s = sg4::Engine::get_clock();
  nlohmann::json summary = cluster_summary(s, workload, deployment, total, links, pool.get(), end_s);
  if (progress) {
    progress->finish({end_s, summary["requests_issued"].get<int64_t>(), summary["events"].get<int64_t>()});
  }
  return summary;
}

}  // namespace kvtier
