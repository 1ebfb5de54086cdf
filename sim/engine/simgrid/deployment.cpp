#include "sim/engine/simgrid/deployment.h"

#include "sim/engine/simgrid/run_parts.h"

namespace sg4 = simgrid::s4u;

namespace kvtier {
namespace {

// Per tier, whether a promotion moves the block out of it (the router cannot tell from the event).
std::vector<bool> exclusive_tiers(const Scenario& s) {
  std::vector<bool> exclusive;
  for (const TierSpec& t : s.tiers) exclusive.push_back(t.placement == Placement::kExclusive);
  return exclusive;
}

}  // namespace

// The payload means nothing, but SimGrid takes a comm without one for a receive.
void ring(sg4::Mailbox* bell) {
  static int rung = 0;
  bell->put_init(&rung, 0)->detach();
}

Replica::Replica(const Scenario& s, const CostModel& cost, int index, std::shared_ptr<const NodeZone> node,
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
  engine = std::make_unique<ServingInstance>(std::move(config), cost, platform, cache, driver, records,
                                             wiring.transfers);
  engine->listen(doorbell);
}

Deployment::Deployment(const Scenario& s, const CostModel& cost,
                       const std::vector<std::shared_ptr<const NodeZone>>& nodes,
                       const std::vector<std::string>& tiers, double window_s, SharedPool* pool,
                       Fabric* fabric, ReplayDriver& workload, sg4::Mailbox* router_bell, FinalRecord final,
                       const std::vector<TransfersCsvWriter*>& transfers)
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
    if (!transfers.empty()) w.transfers = transfers[i];
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
  return [this](uint64_t id, double now, bool rejected) {
    // A decode replica that rejects a request never receives its KV: the handoff's flows are let go.
    if (rejected && handoffs) handoffs->forget(id);
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

}  // namespace kvtier
