#include "sim/serving/scheduler.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

namespace kvtier {

// What every step reads comes first: a step visits every sequence of the batch.
struct Scheduler::Sequence {
  int64_t prefilled = 0;  // tokens whose KV exists, cached ones included
  int64_t decoded = 0;    // output tokens produced, the first token included
  std::optional<LoadHandle> load;
  Request request;
  size_t record = 0;
  std::vector<uint32_t> chain;  // the request's blocks in the cache's table, from its first admission try
  Admission admission;
  int64_t cached_tokens = 0;         // loaded or already in HBM, not recomputed
  std::vector<double> load_weights;  // per tier, its uncontended load time: how a wait splits over tiers
  std::vector<bool> recompute_tier;  // hits of these tiers are recomputed instead of loaded
  int64_t shared_blocks = 0;         // blocks after the cache's hits that the shared tier holds

  bool loading() const { return load.has_value(); }
  bool prefill_done() const { return prefilled >= request.input_tokens; }
  bool decoding() const { return prefill_done() && decoded > 0 && decoded < request.output_tokens; }
  int64_t context() const { return prefilled + decoded; }
};

// Collects the cache's events during one call, to turn them into transfers afterwards.
class Scheduler::EventCollector : public CacheEventSink {
 public:
  explicit EventCollector(CacheEventSink* observer) : observer_(observer) {}
  void on_event(const CacheEvent& event) override {
    events.push_back(event);
    if (observer_ != nullptr) observer_->on_event(event);
  }
  std::vector<CacheEvent> events;

 private:
  CacheEventSink* observer_;
};

Scheduler::Scheduler(SchedulerConfig config, const CostModel& cost, TieredCache& cache, ReplayDriver& driver,
                     ServingBackend& backend, RequestLog& records, SchedulerState& state)
    : config_(std::move(config)),
      cost_(cost),
      cache_(cache),
      driver_(driver),
      backend_(backend),
      records_(records),
      state_(state),
      events_(std::make_unique<EventCollector>(config_.cache_observer)) {
  state_.hits_since_sample.assign(tier_count(), 0);
  for (int from = 0; from < cache_.tier_count(); ++from) {
    for (int to = 0; to < cache_.tier_count(); ++to) {
      const bool differ = cache_.tier(from).layout != cache_.tier(to).layout;
      converts_.push_back(differ && (from == 0 || to == 0));
    }
  }
  // Single events matter to a backend that logs each store, to a shared tier or an observer, and to
  // conversions, whose time is summed event by event.
  moves_by_flow_ = !config_.store_each_block && config_.shared_tier == nullptr &&
                   config_.cache_observer == nullptr &&
                   std::ranges::none_of(converts_, [](uint8_t c) { return c; });
  if (moves_by_flow_) {
    moved_ = cache_.traffic();
  } else {
    cache_.set_event_sink(events_.get());
  }
  // From totals, the decode KV's sum is the walk's to the byte only in whole bytes per token.
  const double kv = cost_.kv_bytes_per_token();
  may_run_decodes_ = !config_.list_decodes && !cost_.prices_each_decode() && kv == std::floor(kv);
}

Scheduler::~Scheduler() {
  cache_.set_event_sink(nullptr);
}

RequestRecord& Scheduler::record(const Sequence& seq) {
  return records_[seq.record];
}

bool Scheduler::finished() const {
  return driver_.done() && waiting_.empty() && running_.empty();
}

const Decision& Scheduler::decide() {
  take_arrivals();
  finish_loads();
  admit_waiting();
  if (plan_step()) {
    decision_.kind = Decision::Kind::kStep;
    step_started_s_ = backend_.now();
  } else if (running_.empty() && !waiting_.empty()) {
    // Nothing runs and the head of the queue still does not fit: it never will.
    reject(*waiting_.front());
    waiting_.pop_front();
    decision_.kind = Decision::Kind::kRejected;
  } else {
    decision_.kind = Decision::Kind::kWait;
    decision_.awaited_loads.clear();
    for (const auto& seq : running_) {
      if (seq->loading()) decision_.awaited_loads.push_back(*seq->load);
    }
    decision_.next_arrival_s = driver_.next_ready_time();
  }
  return decision_;
}

void Scheduler::end_iteration() {
  state_.queued = waiting_count();
  state_.running = running_count();
}

void Scheduler::take_arrivals() {
  double now = backend_.now();
  while (auto ready = driver_.next_ready_time()) {
    if (*ready > now) break;
    auto seq = std::make_unique<Sequence>();
    seq->request = driver_.pop_ready();
    RequestRecord r;
    r.id = seq->request.id;
    r.session_id = seq->request.session_id;
    r.turn = seq->request.turn;
    r.arrival_s = *ready;  // not now: one arriving during a step waits for it, and its TTFT counts that
    r.input_tokens = seq->request.input_tokens;
    seq->request.output_tokens =
        std::max<int64_t>(1, seq->request.output_tokens);  // the first token at least
    r.output_tokens = seq->request.output_tokens;
    r.hit_tokens.assign(tier_count(), 0);
    r.load_wait_by_tier.assign(tier_count(), 0);
    seq->record = records_.add(std::move(r));
    if (seq->request.input_tokens <= 0) {
      reject(*seq);  // no prompt: no step could ever produce its first token
      continue;
    }
    waiting_.push_back(std::move(seq));
  }
}

void Scheduler::reject(Sequence& seq) {
  RequestRecord& r = record(seq);
  r.rejected = true;
  driver_.on_reject(r.id, backend_.now());
  records_.settle();
}

// The head of the queue, once refused, is tried again only when the cache may have room for it (its
// room_generation moved): under overload the refusals would otherwise cost a pass over its blocks every
// step.
void Scheduler::admit_waiting() {
  while (!waiting_.empty() && running_count() < config_.max_running) {
    Sequence& head = *waiting_.front();
    if (head.record == refused_record_ && !may_fit_now(head)) break;
    if (!admit(head)) {
      refused_record_ = head.record;
      refused_at_ = cache_.room_generation();
      break;
    }
    refused_record_ = SIZE_MAX;  // blocks were pinned: what a refusal saw no longer bounds anything
    end_decode_run();
    running_.push_back(std::move(waiting_.front()));
    waiting_.pop_front();
  }
}

// Whether the refused head may fit now. Nothing has been pinned since its refusal (admissions go in
// order, and any admission forgets the refusal), so the blocks it would pin anew can only have grown:
// where those of the refusal do not fit beside HBM's pinned blocks, the admission would fail again.
bool Scheduler::may_fit_now(const Sequence& head) const {
  return cache_.room_generation() != refused_at_ &&
         cache_.pinned_blocks(0) + head.admission.new_pins <= cache_.capacity_blocks(0);
}

bool Scheduler::admit(Sequence& seq) {
  events_->events.clear();
  // A queue head may be tried at every step while it waits for room: its blocks are looked up once.
  if (seq.chain.empty()) cache_.intern(seq.request.block_ids, seq.chain);
  if (!cache_.admit_chain(seq.chain, seq.admission)) return false;
  if (seq.request.prefilled_elsewhere) {
    receive_prefilled(seq);
    return true;
  }
  if (config_.shared_tier != nullptr) {
    seq.shared_blocks = config_.shared_tier->leading_run(
        std::span(seq.request.block_ids).subspan(static_cast<size_t>(seq.admission.prefix.hit_blocks)));
  }
  record(seq).admitted_s = backend_.now();
  count_hits(seq);
  state_.input_since_sample += seq.request.input_tokens;
  choose_loads(seq);
  backend_.cache_admitted(seq.request.id, seq.request.block_ids, seq.recompute_tier);
  seq.prefilled = seq.cached_tokens;
  start_transfers(&seq);
  return true;
}

// The KV of a request prefilled elsewhere arrives whole into the blocks just pinned: whatever the lower
// tiers held of it is not loaded (every tier counts as recomputed, so no promotion moves), and no hit is
// counted here, where nothing is saved. The placement's demotions and write-throughs still move.
void Scheduler::receive_prefilled(Sequence& seq) {
  record(seq).admitted_s = backend_.now();
  seq.recompute_tier.assign(tier_count(), true);
  backend_.cache_admitted(seq.request.id, seq.request.block_ids, seq.recompute_tier);
  start_transfers(&seq);
  seq.load = backend_.receive_prefilled_kv(seq.request.id);
  ++loading_;
  seq.prefilled = seq.request.input_tokens;
}

// Hit tokens per tier; at least one token is always computed, so a full hit gives back its last token.
void Scheduler::count_hits(Sequence& seq) {
  RequestRecord& r = record(seq);
  const int64_t block_tokens = cache_.tier(0).block_tokens;
  int64_t budget = seq.request.input_tokens - 1;
  const PrefixHit& hit = seq.admission.prefix;
  auto count = [&](int tier) {
    int64_t tokens = std::min(block_tokens, budget);
    r.hit_tokens[tier] += tokens;
    state_.hits_since_sample[tier] += tokens;
    budget -= tokens;
  };
  for (size_t b = 0; b < hit.tier_of_block.size() && budget > 0; ++b) count(hit.tier_of_block[b]);
  for (int64_t b = 0; b < seq.shared_blocks && budget > 0; ++b) count(cache_.tier_count());
}

const KvLayout& Scheduler::layout_of(int tier) const {
  return tier < cache_.tier_count() ? cache_.tier(tier).layout : config_.shared_tier->spec().layout;
}

// Which tiers' hits to load and which to recompute. The cache's state is the same either way (the blocks
// end up pinned in HBM); only the transfers and the prefill work differ.
void Scheduler::choose_loads(Sequence& seq) {
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
      double bytes = static_cast<double>(layout_of(static_cast<int>(t)).bytes_per_token() * tokens);
      double load_s = path.latency + bytes / path.bandwidth;
      seq.recompute_tier[t] = cost_.prefill_seconds(hits - tokens, tokens) < load_s;
    }
    if (!seq.recompute_tier[t]) seq.cached_tokens += tokens;
  }
}

// The collected events as transfers: promotions into one load that `waiter` waits for, demotions and
// write-throughs into stores nobody waits for. The link carries the lower tier's layout; the GPU converts
// to and from HBM's layout, which the next step pays for.
void Scheduler::start_transfers(Sequence* waiter) {
  const int64_t cause = waiter != nullptr ? static_cast<int64_t>(waiter->request.id) : kNoRequest;
  load_bytes_.assign(tier_count(), 0);
  if (config_.shared_tier != nullptr) load_from_shared_tier(waiter);
  if (moves_by_flow_) {
    move_flows(waiter, cause);
  } else {
    move_events(waiter, cause);
  }
  if (waiter == nullptr) return;
  if (std::any_of(load_bytes_.begin() + 1, load_bytes_.end(), [](double b) { return b != 0; })) {
    waiter->load = backend_.start_load(load_bytes_, waiter->request.id);
    ++loading_;
  }
  waiter->load_weights.assign(load_bytes_.size(), 0);
  for (size_t t = 1; t < load_bytes_.size(); ++t) {
    if (load_bytes_[t] == 0) continue;
    const bool priced = t < config_.tier_load_paths.size() && config_.tier_load_paths[t].bandwidth > 0;
    waiter->load_weights[t] =
        priced ? config_.tier_load_paths[t].latency + load_bytes_[t] / config_.tier_load_paths[t].bandwidth
               : load_bytes_[t];  // no path given: by bytes
  }
}

// Whether `waiter` loads a promotion from `tier` (it may recompute that tier's hits instead).
bool Scheduler::loads_from(const Sequence* waiter, int tier) const {
  return waiter == nullptr || !waiter->recompute_tier[tier];
}

void Scheduler::move_events(Sequence* waiter, int64_t cause) {
  for (const CacheEvent& e : events_->events) {
    if (e.kind == CacheEventKind::kPlace && config_.shared_tier != nullptr)
      write_to_shared_tier(e.block, cause);
    if (e.kind == CacheEventKind::kPlace || e.kind == CacheEventKind::kDrop) continue;
    if (e.kind == CacheEventKind::kPromote && !loads_from(waiter, e.from_tier)) continue;
    if (converts_[e.from_tier * cache_.tier_count() + e.to_tier]) {
      const ConversionRates& rates = config_.tier_conversions[e.from_tier == 0 ? e.to_tier : e.from_tier];
      double rate = e.to_tier == 0 ? rates.load_bytes_per_s : rates.store_bytes_per_s;
      conversion_s_ += static_cast<double>(e.from_bytes + e.to_bytes) / rate;
    }
    double bytes = static_cast<double>(e.from_tier == 0 ? e.to_bytes : e.from_bytes);
    if (e.kind == CacheEventKind::kPromote) {
      load_bytes_[e.from_tier] += bytes;
      continue;
    }
    backend_.start_store(e.from_tier, e.to_tier, bytes, cause);
  }
}

// The same from the cache's totals since the last call: a flow's blocks move as one load part or one
// store. Sums of whole bytes, so each tier's load and each path's queue get what the events would give.
void Scheduler::move_flows(Sequence* waiter, int64_t cause) {
  const TrafficTotals& now = cache_.traffic();
  if (now.blocks() == moved_.blocks()) return;
  const int tiers = cache_.tier_count();
  for (const CacheEventKind kind :
       {CacheEventKind::kPromote, CacheEventKind::kWriteThrough, CacheEventKind::kDemote}) {
    for (int from = 0; from < tiers; ++from) {
      for (int to = 0; to < tiers; ++to) {
        const TrafficTotals::Flow& flow = now.flow(kind, from, to);
        const TrafficTotals::Flow& before = moved_.flow(kind, from, to);
        if (flow.blocks == before.blocks) continue;
        const auto bytes = static_cast<double>(from == 0 ? flow.to_bytes - before.to_bytes
                                                         : flow.from_bytes - before.from_bytes);
        if (kind != CacheEventKind::kPromote) {
          backend_.start_store(from, to, bytes, cause);
        } else if (loads_from(waiter, from)) {
          load_bytes_[from] += bytes;
        }
      }
    }
  }
  moved_ = now;
}

// The shared tier's part of a load: the waiter's blocks it holds (unless recomputed). Its layout converts to
// and from HBM's on the GPU, as a lower tier's does.
void Scheduler::load_from_shared_tier(const Sequence* waiter) {
  const int shared = cache_.tier_count();
  if (waiter == nullptr || waiter->shared_blocks == 0 || waiter->recompute_tier[shared]) return;
  const auto blocks = static_cast<double>(waiter->shared_blocks);
  load_bytes_[shared] += blocks * static_cast<double>(config_.shared_tier->spec().bytes_per_block());
  convert_shared(blocks, true);
}

// A block placed in HBM is written through to the shared tier, unless it holds the block already.
void Scheduler::write_to_shared_tier(uint64_t block, int64_t cause) {
  if (!config_.shared_tier->store(block)) return;
  convert_shared(1, false);
  backend_.start_store(0, cache_.tier_count(),
                       static_cast<double>(config_.shared_tier->spec().bytes_per_block()), cause);
}

// The GPU's time converting `blocks` between the shared tier's layout and HBM's, when they differ.
void Scheduler::convert_shared(double blocks, bool load) {
  const int shared = cache_.tier_count();
  if (layout_of(shared) == layout_of(0)) return;
  const ConversionRates& rates = config_.tier_conversions.at(shared);
  const auto bytes =
      static_cast<double>(config_.shared_tier->spec().bytes_per_block() + cache_.tier(0).bytes_per_block());
  conversion_s_ += blocks * bytes / (load ? rates.load_bytes_per_s : rates.store_bytes_per_s);
}

void Scheduler::finish_loads() {
  if (loading_ == 0) return;
  double now = backend_.now();
  bool any_landed = false;
  for (auto& seq : running_) {
    if (!seq->loading() || !backend_.load_done(*seq->load)) continue;
    if (!any_landed) end_decode_run();  // before the landing makes a decoder the run did not count
    seq->load.reset();
    --loading_;
    any_landed = true;
    // From the admission, not from start_load: a backend whose cache call ran the load's copies
    // (kvtier-hw serve) spent their time before the load was started.
    RequestRecord& r = record(*seq);
    r.load_wait_s = now - r.admitted_s;
    split_load_wait(*seq);
    if (seq->prefill_done() && seq->decoded == 0) {  // overlapped prefill finished first
      r.first_token_s = now;
      seq->decoded = 1;
    }
  }
  // Only a sequence whose load just landed can be left with nothing to do: the step completed the rest.
  if (any_landed) remove_completed();
}

// In batch order, as every step's completions are.
void Scheduler::remove_completed() {
  std::erase_if(running_, [&](const auto& seq) {
    if (seq->loading() || seq->decoded < seq->request.output_tokens || !seq->prefill_done()) return false;
    complete(*seq);
    return true;
  });
}

// A load's wait over the tiers it read, in proportion to each tier's uncontended load time: the tiers load
// at once over their own paths, so which one held the request up is not recorded, only how long it waited.
void Scheduler::split_load_wait(const Sequence& seq) {
  RequestRecord& r = record(seq);
  double total = 0;
  for (double w : seq.load_weights) total += w;
  for (size_t t = 0; t < seq.load_weights.size(); ++t)
    r.load_wait_by_tier[t] = total > 0 ? r.load_wait_s * seq.load_weights[t] / total : 0;
}

// Decodes first, one token each; prefill chunks from the remaining budget, oldest first. Returns whether
// the step has work; only then does it take the pending conversion time.
bool Scheduler::plan_step() {
  if (run_.steady) {
    plan_decode_run();  // a run always has decoders: the step has work
    return true;
  }
  sync_decoders();
  StepPlan& plan = decision_.step;
  plan.decodes.clear();
  plan.prefills.clear();
  int64_t budget = config_.max_batch_tokens;
  step_work_.clear();
  // One pass over the batch: the decodes, and the sequences that may prefill (in batch order), which the
  // budget left after the decodes then serves.
  prefill_candidates_.clear();
  for (const auto& seq : running_) {
    if (seq->decoding()) {
      const int64_t context = seq->context();
      if (config_.list_decodes) plan.decodes.push_back({seq->request.id, context});
      step_work_.add_decode(context);
      --budget;
    } else if (!seq->prefill_done() && (!seq->loading() || config_.layerwise_overlap)) {
      prefill_candidates_.push_back(seq.get());
    }
  }
  for (size_t i = 0; i < prefill_candidates_.size() && budget > 0; ++i) {
    const Sequence& s = *prefill_candidates_[i];
    int64_t tokens = std::min(budget, s.request.input_tokens - s.prefilled);
    plan.prefills.push_back({s.request.id, s.prefilled, tokens, s.load});
    budget -= tokens;
    step_work_.add_prefill(s.prefilled, tokens);
  }
  plan.tokens = config_.max_batch_tokens - budget;
  if (plan.tokens == 0) return false;
  price_step();
  return true;
}

// The next step of a decode run: the same decoders, each a token further (the walk's budget left nothing
// to prefill the time before, and nothing has changed since).
void Scheduler::plan_decode_run() {
  ++state_.decode_run_steps;
  StepPlan& plan = decision_.step;
  plan.prefills.clear();
  step_work_.clear();
  step_work_.add_decodes(run_.decoders, run_.context);
  plan.tokens = run_.decoders;
  price_step();
}

// The planned step's time, and the conversion work it takes over.
void Scheduler::price_step() {
  StepPlan& plan = decision_.step;
  plan.compute_s = cost_.step_seconds(step_work_);
  const std::optional<PowerThrottle> throttle = cost_.throttle();
  plan.heats_gpu = throttle && cost_.compute_bound(step_work_);
  // Only a throttle with attention's own factor needs the step's prefill attention apart.
  plan.prefill_attention_s =
      plan.heats_gpu && throttle->attention_slowdown ? cost_.prefill_attention_seconds(step_work_) : 0;
  plan.conversion_s = conversion_s_;
  plan.seconds = plan.compute_s + plan.conversion_s;
  conversion_s_ = 0;
}

void Scheduler::finish_step() {
  ++state_.steps;
  state_.busy_s += backend_.now() - step_started_s_;
  apply_step();
  fit_decode_kv();
}

// Advances every sequence by what the plan gave it: its prefill chunk, or one decoded token.
void Scheduler::apply_step() {
  if (run_.steady) {
    apply_decode_run();
    return;
  }
  double now = backend_.now();
  const StepPlan& step = decision_.step;
  const std::vector<PrefillChunk>& chunks = step.prefills;
  // The step's time as it ran, split into compute and conversion as planned.
  const double ran_s = now - step_started_s_;
  const double conversion_share = step.seconds > 0 ? step.conversion_s / step.seconds : 0;
  size_t next_chunk = 0;
  bool any_done = false;
  // Added to per decode, in order, as the state's own field would be, but kept out of memory in the loop.
  double decode_kv_bytes = state_.decode_kv_bytes;
  const double kv_bytes_per_token = cost_.kv_bytes_per_token();
  int64_t steps_left = INT64_MAX;  // until a decoder's last token
  for (auto& seq : running_) {
    Sequence& s = *seq;
    if (next_chunk < chunks.size() && chunks[next_chunk].request_id == s.request.id) {
      RequestRecord& r = record(s);
      int64_t tokens = chunks[next_chunk++].tokens;
      if (r.prefill_start_s < 0) r.prefill_start_s = now;
      r.prefill_s += ran_s * (1 - conversion_share);
      r.conversion_s += ran_s * conversion_share;
      s.prefilled += tokens;
      r.recomputed_tokens += tokens;
      if (s.prefill_done() && !s.loading()) {
        r.first_token_s = now;
        s.decoded = 1;
      }
    } else if (s.decoding()) {
      ++s.decoded;
      decode_kv_bytes += kv_bytes_per_token;
      steps_left = std::min(steps_left, s.request.output_tokens - s.decoded);
    }
    any_done = any_done || (s.decoded >= s.request.output_tokens && !s.loading());
  }
  state_.decode_kv_bytes = decode_kv_bytes;
  if (any_done) {
    remove_completed();
  } else if (may_run_decodes_ && chunks.empty()) {
    run_ = {.steady = true,
            .decoders = step_work_.decodes,
            .context = step_work_.decode_context + step_work_.decodes,
            .pending = 0,
            .steps_left = steps_left};
  }
}

// A step of the decode run: each decoder's token counted in the totals alone, until one of them has its
// last. The decode KV grows by whole bytes, so one addition gives what the walk's additions give.
void Scheduler::apply_decode_run() {
  ++run_.pending;
  state_.decode_kv_bytes += cost_.kv_bytes_per_token() * static_cast<double>(run_.decoders);
  run_.context += run_.decoders;
  if (--run_.steps_left > 0) return;
  end_decode_run();
  remove_completed();
}

// Gives each decoder the tokens the run counted in its totals alone.
void Scheduler::sync_decoders() {
  if (run_.pending == 0) return;
  for (auto& seq : running_) {
    if (seq->decoding()) seq->decoded += run_.pending;
  }
  run_.pending = 0;
}

// The batch changes (an admission, a load landing, a completion, a preemption): the next step is planned
// by the walk.
void Scheduler::end_decode_run() {
  sync_decoders();
  run_.steady = false;
}

void Scheduler::complete(Sequence& seq) {
  double now = backend_.now();
  record(seq).completion_s = now;
  state_.decode_kv_bytes -= cost_.kv_bytes_per_token() * static_cast<double>(seq.decoded - 1);
  cache_.release(seq.admission);
  backend_.cache_released(seq.request.id);
  driver_.on_complete(seq.request.id, now);
  records_.settle();
}

// Decode KV lives beside the cache in HBM: shrink the cache's area to what is left, preempting the newest
// request while even the pinned blocks do not fit.
void Scheduler::fit_decode_kv() {
  auto cache_area = [&] { return static_cast<int64_t>(config_.kv_space_bytes - state_.decode_kv_bytes); };
  events_->events.clear();
  while (!cache_.set_capacity(0, std::max<int64_t>(0, cache_area()))) {
    if (running_.empty()) break;
    preempt_newest();
  }
  if (cache_.tier(0).capacity_bytes != reported_capacity_) {
    reported_capacity_ = cache_.tier(0).capacity_bytes;
    backend_.cache_capacity_set(0, reported_capacity_);
  }
  start_transfers(nullptr);  // evictions only: demotions and drops, no promotions
}

void Scheduler::preempt_newest() {
  end_decode_run();
  std::unique_ptr<Sequence> seq = std::move(running_.back());
  running_.pop_back();
  if (seq->loading()) {
    backend_.cancel_load(*seq->load);
    --loading_;
  }
  seq->load.reset();
  if (seq->decoded > 1)
    state_.decode_kv_bytes -= cost_.kv_bytes_per_token() * static_cast<double>(seq->decoded - 1);
  cache_.release(seq->admission);
  backend_.cache_released(seq->request.id);
  RequestRecord& r = record(*seq);
  ++r.preemptions;
  r.first_token_s = -1;
  seq->request.prefilled_elsewhere = false;  // its KV is gone: recomputed here
  if (running_.empty()) {
    // It ran alone and its prompt and output still outgrew HBM: run again, it would end here again.
    reject(*seq);
    return;
  }
  std::fill(r.hit_tokens.begin(), r.hit_tokens.end(), 0);
  std::fill(r.load_wait_by_tier.begin(), r.load_wait_by_tier.end(), 0);
  r.load_wait_s = r.prefill_s = r.conversion_s = 0;
  seq->cached_tokens = seq->prefilled = seq->decoded = 0;
  waiting_.push_front(std::move(seq));
}

}  // namespace kvtier
