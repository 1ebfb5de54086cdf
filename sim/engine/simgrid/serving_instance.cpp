#include "sim/engine/simgrid/serving_instance.h"

#include <algorithm>
#include <cmath>

namespace sg4 = simgrid::s4u;

namespace kvtier {
namespace {

// transfers.csv's rows are written whenever this many more wait for the transfers that started before
// them.
constexpr size_t kTransfersWrittenEvery = 4096;

// Every "<from>-><to>" of transfers.csv, from * tiers + to: named once, not at every store.
std::vector<std::string> tier_paths(const std::vector<std::string>& names) {
  std::vector<std::string> paths;
  paths.reserve(names.size() * names.size());
  for (const std::string& from : names) {
    for (const std::string& to : names) paths.push_back(transfer_path(from, to));
  }
  return paths;
}

// transfers.csv has a row per stored block; without it, the store queues need only each path's bytes.
SchedulerConfig stores_by_block(SchedulerConfig config, bool logged) {
  config.store_each_block = logged;
  return config;
}

}  // namespace

ServingInstance::ServingInstance(InstanceConfig config, const CostModel& cost, Platform& platform,
                                 TieredCache& cache, ReplayDriver& driver, RequestLog& records,
                                 TransfersCsvWriter* transfers)
    : tier_media_(std::move(config.tier_media)),
      tier_paths_(tier_paths(config.tier_names)),
      blocking_transfers_(config.blocking_transfers),
      prefilled_kv_(std::move(config.prefilled_kv)),
      on_step_(std::move(config.on_step)),
      platform_(platform),
      transfers_(transfers),
      stores_(platform, transfers),
      heat_(cost.throttle().value_or(PowerThrottle{})),
      scheduler_(stores_by_block(std::move(config), transfers != nullptr), cost, cache, driver, *this,
                 records, state_) {}

// The step's compute at the GPU's present heat (the time since the last step cooled it), then its
// conversions, which are memory-bound.
void ServingInstance::run_step(const StepPlan& step) {
  if (on_step_) on_step_(step, false);
  heat_.rest(now() - last_step_end_);
  pass(heat_.run(step.compute_s, step.heats_gpu, step.prefill_attention_s) + step.conversion_s);
  last_step_end_ = now();
  if (on_step_) on_step_(step, true);
}

// SimGrid ends a sleep of d begun at t at t + d, rounded once, whatever else sleeps beside it: the
// instance's clock does the same addition, so every time it reads is the one SimGrid would give. A sleep
// that ends when the other actor wakes is SimGrid's, begun when it would have been: SimGrid's heap of
// sleeps is stable, so the two wake in the order they would have.
void ServingInstance::pass(double seconds) {
  const double until = now() + seconds;
  if (may_pass_alone(until)) {
    ahead_s_ = until;
    return;
  }
  catch_up();
  sg4::this_actor::sleep_for(seconds);
}

// Nothing before `until` needs SimGrid's clock: the other actor does not wake. Transfers in flight move on
// SimGrid's links meanwhile, and nobody waits for them before the step ends: the scheduler asks after its
// loads at every iteration, catching up first (load_done), and the pump asks after the stores once they
// could have landed, so each is asked at the instant it would have been after a SimGrid sleep. A load
// that waits for the stores before it (blocking) starts when they land: it keeps the instance on
// SimGrid's clock.
bool ServingInstance::may_pass_alone(double until) const {
  return alone_at(until) && waiting_loads_ == 0;
}

// Ahead of SimGrid's clock, a pump that would only log batches waits for the next catch-up
// (StoreQueues::defer_pump); one that would start a batch needs SimGrid's clock now. Blocking transfers
// always pump at once: a load waits for the stores before it to land.
void ServingInstance::pump_stores() {
  if (now() < stores_.earliest_landing_s()) return;  // no batch can have landed
  if (ahead_s_ && !blocking_transfers_ && stores_.defer_pump(now())) return;
  catch_up();
  stores_.pump();
}

void ServingInstance::start_idle_stores() {
  if (!stores_.idle_path_queued()) return;
  catch_up();
  stores_.start_idle();
}

// A sleep whose end, SimGrid's clock plus its length rounded once, is exactly the instance's clock; then the
// pumps deferred meanwhile.
void ServingInstance::catch_up() {
  if (!ahead_s_) return;
  const double target = *ahead_s_;
  ahead_s_.reset();
  const double from = sg4::Engine::get_clock();
  double seconds = target - from;
  while (from + seconds < target) seconds = std::nextafter(seconds, HUGE_VAL);
  while (from + seconds > target) seconds = std::nextafter(seconds, -HUGE_VAL);
  sg4::this_actor::sleep_for(seconds);
  stores_.pump_deferred();
}

void ServingInstance::run(const std::function<void()>& each_iteration) {
  while (!scheduler_.finished()) {
    if (each_iteration) each_iteration();
    if (transfers_ && transfers_->held() >= write_transfers_at_) write_started_transfers();
    pump_stores();
    if (blocking_transfers_) start_waiting_loads();
    const Decision& decision = scheduler_.decide();
    start_idle_stores();  // those of decide()'s last cache call, before anything waits on them
    if (decision.kind == Decision::Kind::kStep) {
      if (blocking_transfers_) settle_transfers();
      run_step(decision.step);
      scheduler_.finish_step();
      start_idle_stores();  // those of the step's releases and capacity change
    } else if (decision.kind == Decision::Kind::kWait && !wait_for_work(decision)) {
      break;
    }
    scheduler_.end_iteration();
  }
  catch_up();  // the run's end on SimGrid's clock
}

// Until the next arrival or until any load or store ends; false when there is neither to wait for. Only
// the copies still moving are waited on: a load or a store batch of several copies is not over while one
// of them moves, and a wait that held a copy already landed would return at once, on the same clock, and
// the loop would never end.
bool ServingInstance::wait_for_work(const Decision& decision) {
  // The transfers in flight are asked after below, on SimGrid's clock; with none, an idle wait may pass on
  // the instance's own (a doorbell never runs alone).
  if (stores_.moving() || !loads_.empty()) catch_up();
  std::vector<sg4::CommPtr> pending;
  auto add_moving = [&](const std::vector<sg4::CommPtr>& comms) {
    for (const sg4::CommPtr& c : comms) {
      if (!c->test()) pending.push_back(c);
    }
  };
  add_moving(stores_.in_flight());
  for (LoadHandle load : decision.awaited_loads) {
    for (const LoadPart& part : loads_.at(load).parts) add_moving(part.comms);
  }
  if (doorbell_ != nullptr) {
    if (bell_ && bell_->test()) bell_ = nullptr;
    if (!bell_) bell_ = doorbell_->get_async(&rung_);
    pending.push_back(bell_);
  }
  const std::optional<double>& next = decision.next_arrival_s;
  if (pending.empty()) {
    if (!next) return false;
    if (*next > now()) pass(*next - now());  // as SimGrid's sleep_until
    return true;
  }
  double timeout = next ? std::max(0.0, *next - sg4::Engine::get_clock()) : -1;
  sg4::Comm::wait_any_for(pending, timeout);
  return true;
}

// Blocking transfers: every copy started so far lands before the step runs, stores queued behind a batch
// in flight and loads waiting for the stores included, as when a connector loads and saves KV on the
// serving thread.
void ServingInstance::settle_transfers() {
  catch_up();
  while (true) {
    stores_.pump();
    start_waiting_loads();
    std::vector<sg4::CommPtr> pending = stores_.in_flight();
    for (const auto& [handle, load] : loads_) {
      for (const LoadPart& part : load.parts) {
        for (const sg4::CommPtr& c : part.comms) {
          if (!c->test()) pending.push_back(c);
        }
      }
    }
    if (pending.empty()) return;
    sg4::Comm::wait_all(pending);
  }
}

// No transfer logged from now on starts before the loads and store batches in flight did, nor before now
// (a store still queued starts when its batch does).
void ServingInstance::write_started_transfers() {
  double horizon = std::min(now(), stores_.earliest_start_in_flight());
  for (const auto& [handle, load] : loads_) horizon = std::min(horizon, load.start_s);
  transfers_->write_started_by(horizon);
  write_transfers_at_ = transfers_->held() + kTransfersWrittenEvery;
}

double ServingInstance::now() const {
  return ahead_s_ ? *ahead_s_ : sg4::Engine::get_clock();
}

LoadHandle ServingInstance::start_load(std::span<const double> bytes_by_tier, uint64_t request_id) {
  catch_up();
  Load& load = loads_[next_load_];
  load.start_s = now();
  load.request_id = request_id;
  if (blocking_transfers_) {
    stores_.start_idle();  // the stores of this cache call go first
    if (stores_.moving()) {
      load.waiting_bytes.assign(bytes_by_tier.begin(), bytes_by_tier.end());
      ++waiting_loads_;
      return next_load_++;
    }
  }
  start_copies(load, bytes_by_tier);
  return next_load_++;
}

void ServingInstance::start_copies(Load& load, std::span<const double> bytes_by_tier) {
  load.start_s = now();
  load.earliest_landing_s = load.start_s;
  for (size_t t = 1; t < bytes_by_tier.size(); ++t) {
    if (bytes_by_tier[t] == 0) continue;
    load.earliest_landing_s = std::max(
        load.earliest_landing_s,
        platform_.earliest_landing_s(tier_media_[t], tier_media_[0], bytes_by_tier[t], load.start_s));
    auto started = platform_.transfer(tier_media_[t], tier_media_[0], bytes_by_tier[t]);
    state_.transfers += static_cast<int64_t>(started.size());
    load.parts.push_back({static_cast<int>(t), bytes_by_tier[t], std::move(started)});
  }
}

void ServingInstance::start_waiting_loads() {
  if (waiting_loads_ == 0 || stores_.moving()) return;
  for (auto& [handle, load] : loads_) {
    if (load.waiting_bytes.empty()) continue;
    start_copies(load, load.waiting_bytes);
    load.waiting_bytes.clear();
  }
  waiting_loads_ = 0;
}

bool ServingInstance::load_done(LoadHandle handle) {
  auto it = loads_.find(handle);
  const Load& load = it->second;
  if (!load.waiting_bytes.empty()) return false;
  // Asking SimGrid is a simcall: skipped while the answer is known to be no and nobody else can act now.
  if (now() < load.earliest_landing_s && alone_at(now())) return false;
  catch_up();
  for (const LoadPart& part : load.parts) {
    if (!std::all_of(part.comms.begin(), part.comms.end(), [](const sg4::CommPtr& c) { return c->test(); }))
      return false;
  }
  if (transfers_) {
    for (const LoadPart& part : load.parts) {
      if (part.tier == kPrefilled) continue;
      double landed = load.start_s;
      for (const sg4::CommPtr& c : part.comms) landed = std::max(landed, c->get_finish_time());
      transfers_->add(
          {tier_path(part.tier, 0), part.bytes, load.start_s, landed, static_cast<int64_t>(load.request_id)});
    }
  }
  loads_.erase(it);
  return true;
}

void ServingInstance::cancel_load(LoadHandle handle) {
  catch_up();  // the copies stop at the instance's time
  auto it = loads_.find(handle);
  if (!it->second.waiting_bytes.empty()) --waiting_loads_;
  for (const LoadPart& part : it->second.parts) {
    if (part.tier != kPrefilled) platform_.cancel(part.comms);  // the sender's handoff goes on
  }
  loads_.erase(it);
}

const std::string& ServingInstance::tier_path(int from_tier, int to_tier) const {
  const size_t tiers = tier_media_.size();
  return tier_paths_[static_cast<size_t>(from_tier) * tiers + static_cast<size_t>(to_tier)];
}

LoadHandle ServingInstance::receive_prefilled_kv(uint64_t request_id) {
  Load& load = loads_[next_load_];
  load.start_s = now();
  load.request_id = request_id;
  load.parts.push_back({kPrefilled, 0, prefilled_kv_(request_id)});
  return next_load_++;
}

// Queued, not started: every store of one cache call goes in one batch (store_queue.h).
void ServingInstance::start_store(int from_tier, int to_tier, double bytes, int64_t cause) {
  if (stores_.landed_unpumped(tier_media_[from_tier], tier_media_[to_tier])) catch_up();
  stores_.add(tier_media_[from_tier], tier_media_[to_tier], tier_path(from_tier, to_tier), bytes, cause);
}

void ServingInstance::cache_admitted(uint64_t, std::span<const uint64_t>, const std::vector<bool>&) {
  start_idle_stores();
}

void ServingInstance::cache_released(uint64_t) {
  start_idle_stores();
}

void ServingInstance::cache_capacity_set(int, int64_t) {
  start_idle_stores();
}

}  // namespace kvtier
