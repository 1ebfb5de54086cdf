#include "serving_instance.h"

#include <algorithm>

namespace sg4 = simgrid::s4u;

namespace kvtier {

struct ServingInstance::Sequence {
  Request request;
  size_t record = 0;
  Admission admission;
  int64_t cached_tokens = 0;  // loaded or already in HBM, not recomputed
  int64_t prefilled = 0;      // tokens whose KV exists, cached ones included
  int64_t decoded = 0;        // output tokens produced, the first token included
  std::vector<sg4::CommPtr> loads;
  double load_started_s = 0;
  std::vector<bool> recompute_tier;  // hits of these tiers are recomputed instead of loaded

  bool loading() const { return !loads.empty(); }
  bool prefill_done() const { return prefilled >= request.input_tokens; }
  int64_t context() const { return prefilled + decoded; }
};

// Collects the cache's events during one call, to turn them into transfers afterwards.
class ServingInstance::EventCollector : public CacheEventSink {
 public:
  void on_event(const CacheEvent& event) override { events.push_back(event); }
  std::vector<CacheEvent> events;
};

ServingInstance::ServingInstance(InstanceConfig config, const CostModel& cost, Platform& platform,
                                 TieredCache& cache, ReplayDriver& driver,
                                 std::vector<RequestRecord>& records)
    : config_(std::move(config)),
      cost_(cost),
      platform_(platform),
      cache_(cache),
      driver_(driver),
      records_(records),
      events_(std::make_unique<EventCollector>()),
      stores_(platform) {
  state_.hits_since_sample.assign(cache_.tier_count(), 0);
  cache_.set_event_sink(events_.get());
}

ServingInstance::~ServingInstance() {
  cache_.set_event_sink(nullptr);
}

RequestRecord& ServingInstance::record(const Sequence& seq) {
  return records_[seq.record];
}

void ServingInstance::run() {
  while (!(driver_.done() && waiting_.empty() && running_.empty())) {
    take_arrivals();
    stores_.pump();
    finish_loads();
    admit_waiting();
    bool can_step = std::any_of(running_.begin(), running_.end(), [&](const auto& s) {
      return !s->loading() || (config_.layerwise_overlap && !s->prefill_done());
    });
    if (can_step) {
      step();
    } else if (!wait_for_work()) {
      break;
    }
    state_.queued = static_cast<int64_t>(waiting_.size());
    state_.running = static_cast<int64_t>(running_.size());
  }
}

void ServingInstance::take_arrivals() {
  double now = sg4::Engine::get_clock();
  while (auto ready = driver_.next_ready_time()) {
    if (*ready > now) break;
    auto seq = std::make_unique<Sequence>();
    seq->request = driver_.pop_ready();
    seq->record = records_.size();
    RequestRecord r;
    r.id = seq->request.id;
    r.session_id = seq->request.session_id;
    r.turn = seq->request.turn;
    r.arrival_s = now;
    r.input_tokens = seq->request.input_tokens;
    seq->request.output_tokens =
        std::max<int64_t>(1, seq->request.output_tokens);  // the first token at least
    r.output_tokens = seq->request.output_tokens;
    r.hit_tokens.assign(cache_.tier_count(), 0);
    records_.push_back(std::move(r));
    waiting_.push_back(std::move(seq));
  }
}

void ServingInstance::admit_waiting() {
  while (!waiting_.empty() && static_cast<int64_t>(running_.size()) < config_.max_running) {
    if (!admit(*waiting_.front())) break;
    running_.push_back(std::move(waiting_.front()));
    waiting_.pop_front();
  }
}

bool ServingInstance::admit(Sequence& seq) {
  events_->events.clear();
  if (!cache_.admit(seq.request.block_ids, seq.admission)) return false;
  RequestRecord& r = record(seq);
  double now = sg4::Engine::get_clock();
  r.admitted_s = now;
  // Hit tokens per tier; at least one token is always computed, so a full hit gives back its last token.
  const int64_t block_tokens = cache_.tier(0).block_tokens;
  int64_t budget = seq.request.input_tokens - 1;
  const PrefixHit& hit = seq.admission.prefix;
  for (size_t b = 0; b < hit.tier_of_block.size() && budget > 0; ++b) {
    int64_t tokens = std::min(block_tokens, budget);
    r.hit_tokens[hit.tier_of_block[b]] += tokens;
    state_.hits_since_sample[hit.tier_of_block[b]] += tokens;
    budget -= tokens;
  }
  state_.input_since_sample += seq.request.input_tokens;
  choose_loads(seq);
  seq.prefilled = seq.cached_tokens;
  start_transfers(&seq);
  return true;
}

// Which tiers' hits to load and which to recompute. The cache's state is the same either way (the blocks
// end up pinned in HBM); only the transfers and the prefill work differ.
void ServingInstance::choose_loads(Sequence& seq) {
  const RequestRecord& r = record(seq);
  int64_t hits = 0;
  for (int64_t tokens : r.hit_tokens) hits += tokens;
  seq.recompute_tier.assign(r.hit_tokens.size(), false);
  seq.cached_tokens = r.hit_tokens[0];
  for (size_t t = 1; t < r.hit_tokens.size(); ++t) {
    int64_t tokens = r.hit_tokens[t];
    if (tokens == 0) continue;
    if (config_.recompute_when_faster) {
      const LoadPath& path = config_.tier_load_paths[t];
      double bytes = static_cast<double>(cache_.tier(static_cast<int>(t)).layout.bytes_per_token() * tokens);
      double load_s = path.latency + bytes / path.bandwidth;
      seq.recompute_tier[t] = cost_.prefill_seconds(hits - tokens, tokens) < load_s;
    }
    if (!seq.recompute_tier[t]) seq.cached_tokens += tokens;
  }
}

// Loads for promotions (`waiter` waits for them), stores for demotions and write-throughs (nobody
// waits). The link carries the lower tier's layout; the GPU converts to and from HBM's layout.
void ServingInstance::start_transfers(Sequence* waiter) {
  std::vector<double> load_bytes(cache_.tier_count(), 0);
  for (const CacheEvent& e : events_->events) {
    if (e.kind == CacheEventKind::kPlace || e.kind == CacheEventKind::kDrop) continue;
    if (e.kind == CacheEventKind::kPromote && waiter != nullptr && waiter->recompute_tier[e.from_tier]) continue;
    bool converts = cache_.tier(e.from_tier).layout.name != cache_.tier(e.to_tier).layout.name &&
                    (e.from_tier == 0 || e.to_tier == 0);
    if (converts) {
      double rate = e.to_tier == 0 ? config_.dequantize_bytes_per_s : config_.quantize_bytes_per_s;
      gpu_overhead_s_ += static_cast<double>(e.from_bytes + e.to_bytes) / rate;
    }
    double bytes = static_cast<double>(e.from_tier == 0 ? e.to_bytes : e.from_bytes);
    if (e.kind == CacheEventKind::kPromote) {
      load_bytes[e.from_tier] += bytes;
      continue;
    }
    stores_.add(config_.tier_media[e.from_tier], config_.tier_media[e.to_tier], bytes);
  }
  for (size_t t = 1; t < load_bytes.size(); ++t) {
    if (load_bytes[t] == 0) continue;
    auto comms = platform_.transfer(config_.tier_media[t], config_.tier_media[0], load_bytes[t]);
    state_.transfers += static_cast<int64_t>(comms.size());
    waiter->loads.insert(waiter->loads.end(), comms.begin(), comms.end());
  }
  if (waiter != nullptr) waiter->load_started_s = sg4::Engine::get_clock();
}

void ServingInstance::finish_loads() {
  double now = sg4::Engine::get_clock();
  for (auto& seq : running_) {
    if (!seq->loading()) continue;
    if (!std::all_of(seq->loads.begin(), seq->loads.end(), [](const sg4::CommPtr& c) { return c->test(); }))
      continue;
    seq->loads.clear();
    record(*seq).load_wait_s = now - seq->load_started_s;
    if (seq->prefill_done() && seq->decoded == 0) {  // overlapped prefill finished first
      record(*seq).first_token_s = now;
      seq->decoded = 1;
    }
  }
  std::erase_if(running_, [&](const auto& seq) {
    if (seq->loading() || seq->decoded < seq->request.output_tokens || !seq->prefill_done()) return false;
    complete(*seq);
    return true;
  });
}

bool ServingInstance::wait_for_work() {
  std::optional<double> next = driver_.next_ready_time();
  if (running_.empty() && !waiting_.empty()) {  // admission failed with nothing pinned
    reject_unfittable();
    return true;
  }
  std::vector<sg4::CommPtr> pending = stores_.in_flight();
  for (const auto& seq : running_) pending.insert(pending.end(), seq->loads.begin(), seq->loads.end());
  if (pending.empty()) {
    if (!next) return false;
    sg4::this_actor::sleep_until(*next);
    return true;
  }
  double timeout = next ? std::max(0.0, *next - sg4::Engine::get_clock()) : -1;
  sg4::Comm::wait_any_for(pending, timeout);
  return true;
}

// Nothing runs and the head of the queue still does not fit: it never will.
void ServingInstance::reject_unfittable() {
  RequestRecord& r = record(*waiting_.front());
  r.rejected = true;
  driver_.on_complete(r.id, sg4::Engine::get_clock());
  waiting_.pop_front();
}

void ServingInstance::step() {
  std::vector<int64_t> chunks(running_.size(), 0);
  double seconds = plan_step(chunks) + gpu_overhead_s_;
  gpu_overhead_s_ = 0;
  sg4::this_actor::sleep_for(seconds);
  ++state_.steps;
  apply_step(chunks);
  fit_decode_kv();
}

// Decodes first, one token each; prefill chunks from the remaining budget, oldest first.
double ServingInstance::plan_step(std::vector<int64_t>& chunks) {
  int64_t budget = config_.max_batch_tokens;
  int64_t decodes = 0, decode_context = 0;
  double flops = 0, kv_bytes = 0;
  for (size_t i = 0; i < running_.size(); ++i) {
    const Sequence& s = *running_[i];
    if (s.prefill_done() && s.decoded > 0 && s.decoded < s.request.output_tokens) {
      ++decodes;
      decode_context += s.context();
      --budget;
    }
  }
  for (size_t i = 0; i < running_.size() && budget > 0; ++i) {
    const Sequence& s = *running_[i];
    if (s.prefill_done() || (s.loading() && !config_.layerwise_overlap)) continue;
    chunks[i] = std::min(budget, s.request.input_tokens - s.prefilled);
    budget -= chunks[i];
    flops += cost_.prefill_flops(s.prefilled, chunks[i]);
    kv_bytes += cost_.kv_bytes_per_token() * static_cast<double>(s.prefilled + chunks[i]);
  }
  flops += cost_.decode_flops(decodes, decode_context);
  kv_bytes += cost_.kv_bytes_per_token() * static_cast<double>(decode_context);
  int64_t tokens = config_.max_batch_tokens - budget;
  return cost_.step_seconds(flops, kv_bytes, tokens);
}

void ServingInstance::apply_step(const std::vector<int64_t>& chunks) {
  double now = sg4::Engine::get_clock();
  for (size_t i = 0; i < running_.size(); ++i) {
    Sequence& s = *running_[i];
    RequestRecord& r = record(s);
    if (chunks[i] > 0) {
      if (r.prefill_start_s < 0) r.prefill_start_s = now;
      s.prefilled += chunks[i];
      r.recomputed_tokens += chunks[i];
      if (s.prefill_done() && !s.loading()) {
        r.first_token_s = now;
        s.decoded = 1;
      }
    } else if (s.prefill_done() && s.decoded > 0 && s.decoded < s.request.output_tokens) {
      ++s.decoded;
      state_.decode_kv_bytes += cost_.kv_bytes_per_token();
    }
  }
  std::erase_if(running_, [&](const auto& seq) {
    if (seq->decoded < seq->request.output_tokens || seq->loading()) return false;
    complete(*seq);
    return true;
  });
}

void ServingInstance::complete(Sequence& seq) {
  double now = sg4::Engine::get_clock();
  record(seq).completion_s = now;
  state_.decode_kv_bytes -= cost_.kv_bytes_per_token() * static_cast<double>(seq.decoded - 1);
  cache_.release(seq.admission);
  driver_.on_complete(seq.request.id, now);
}

// Decode KV lives beside the cache in HBM: shrink the cache's area to what is left, preempting the newest
// request while even the pinned blocks do not fit.
void ServingInstance::fit_decode_kv() {
  auto cache_area = [&] { return static_cast<int64_t>(config_.kv_space_bytes - state_.decode_kv_bytes); };
  events_->events.clear();
  while (!cache_.set_capacity(0, std::max<int64_t>(0, cache_area()))) {
    if (running_.empty()) break;
    preempt_newest();
  }
  start_transfers(nullptr);  // evictions only: demotions and drops, no promotions
}

void ServingInstance::preempt_newest() {
  std::unique_ptr<Sequence> seq = std::move(running_.back());
  running_.pop_back();
  for (auto& c : seq->loads) c->cancel();
  seq->loads.clear();
  if (seq->decoded > 1)
    state_.decode_kv_bytes -= cost_.kv_bytes_per_token() * static_cast<double>(seq->decoded - 1);
  cache_.release(seq->admission);
  RequestRecord& r = record(*seq);
  ++r.preemptions;
  r.first_token_s = -1;
  std::fill(r.hit_tokens.begin(), r.hit_tokens.end(), 0);
  seq->cached_tokens = seq->prefilled = seq->decoded = 0;
  waiting_.push_front(std::move(seq));
}

}  // namespace kvtier
