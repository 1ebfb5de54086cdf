#include "hw/serve/serving_loop.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <numeric>
#include <stdexcept>
#include <thread>

#include "hw/gpu/check.h"
#include "hw/gpu/device_buffer.h"
#include "hw/kernels/page_copy.h"
#include "hw/model/card_shape.h"
#include "hw/serve/step_runner.h"
#include "hw/serve/store_backend.h"
#include "hw/store/gpu_device_pages.h"
#include "hw/store/page_packing.h"
#include "sim/core/node_links.h"
#include "sim/engine/workload.h"
#include "sim/serving/scheduler.h"

namespace kvtier::hw {
namespace {

// The first `count` pages of a GPU's pages: the store's, so that the rest stay free for decode KV.
class PagePrefix : public DevicePages {
 public:
  PagePrefix(DevicePages& all, int64_t count) : all_(all), count_(count) {}
  int64_t page_count() const override { return count_; }
  uint64_t page_bytes() const override { return all_.page_bytes(); }
  MemoryRegion allocate_host(uint64_t bytes) const override { return all_.allocate_host(bytes); }
  void offload(std::span<const int64_t> pages, std::span<std::byte* const> host) override { all_.offload(pages, host); }
  void reload(std::span<const int64_t> pages, std::span<std::byte* const> host) override { all_.reload(pages, host); }
  void offload_packed(const PagePacking& packing, std::span<const int64_t> pages,
                      std::span<std::byte* const> host) override {
    all_.offload_packed(packing, pages, host);
  }
  void reload_packed(const PagePacking& packing, std::span<const int64_t> pages,
                     std::span<std::byte* const> host) override {
    all_.reload_packed(packing, pages, host);
  }
  void synchronize() override { all_.synchronize(); }

 private:
  DevicePages& all_;
  int64_t count_;
};

constexpr int64_t kSparePages = 64;  // beyond HBM's capacity, so that the store's copies batch
constexpr int64_t kMaxDecodePages = 64;
constexpr uint64_t kWarmupRequest = std::numeric_limits<uint64_t>::max();  // never a replayed request's id

// Each tier's medium by name, for the routes of transfers.csv's paths.
std::map<std::string, Medium> tier_media(const Scenario& s) {
  std::map<std::string, Medium> media;
  for (const TierSpec& t : s.tiers) media.emplace(t.name, t.medium);
  return media;
}

void check_servable(const Scenario& s) {
  const ConfigNode& tiers = s.config->child("cache").child("tiers");
  const std::vector<ConfigNode> elements = tiers.elements();
  for (size_t t = 1; t < s.tiers.size(); ++t) {
    if (s.tiers[t].medium == Medium::kRemote)
      elements[t].child("medium").fail("kvtier-hw serve has no remote pool; use dram or nvme");
    const std::string problem = lower_layout_problem(s.tiers[0].layout, s.tiers[t].layout, s.model.head_dim);
    if (!problem.empty()) elements[t].child("kv").fail("kvtier-hw serve: " + problem);
    if (t > 1 && s.tiers[t].layout != s.tiers[1].layout)
      elements[t].child("kv").fail("kvtier-hw serve's store moves pages between the tiers below HBM unchanged, "
                                   "so they need one layout, " + s.tiers[1].layout.name);
  }
  if (s.gpus != 1) s.config->child("instance").child("gpus").fail("kvtier-hw serve runs one GPU");
  const ConfigNode& instance = s.config->has("instance") ? s.config->child("instance") : *s.config;
  if (s.recompute_when_faster)
    instance.child("load_policy").fail("kvtier-hw serve loads every hit; its breakeven policy is not built yet");
  if (s.layerwise_overlap && s.tiers.size() > 1)
    instance.child("layerwise_overlap")
        .fail("kvtier-hw serve's loads land before the step; its layer-wise overlap is not built yet");
  if (s.tiers.size() > 1 && !s.blocking_transfers) {
    instance.fail("kvtier-hw serve copies KV on the serving thread, so the simulation it is compared with must "
                  "too: set instance.transfers: blocking");
  }
  if (s.tiers[0].layout.groups.size() != 1 || s.tiers[0].layout.name != "bf16")
    elements[0].child("kv").fail("kvtier-hw serve's forward pass reads bf16 KV; got " + s.tiers[0].layout.name);
}

TransformerShape shape_of(const Scenario& s) {
  try {
    return transformer_shape(s.model);
  } catch (const std::invalid_argument& e) {
    s.config->child("model").fail(e.what());
  }
}

int64_t hbm_pages(const Scenario& s) {
  const double block_bytes = static_cast<double>(s.tiers[0].bytes_per_block());
  return static_cast<int64_t>(std::max(static_cast<double>(s.tiers[0].capacity_blocks()),
                                       std::floor(s.kv_space_bytes / block_bytes))) + kSparePages;
}

// Blocks of the NVMe tier's own layout: packed int4 pages where the tiers below HBM are int4.
std::unique_ptr<NvmeStore> open_nvme(const Scenario& s, const ServeOptions& o) {
  auto nvme = std::find_if(s.tiers.begin(), s.tiers.end(), [](const TierSpec& t) { return t.medium == Medium::kNvme; });
  if (nvme == s.tiers.end()) return nullptr;
  const std::string path =
      (std::filesystem::path(o.nvme_directory) / ("kvtier-serve-" + std::to_string(::getpid()) + ".store")).string();
  return NvmeStore::create(path, {.block_bytes = static_cast<uint64_t>(nvme->bytes_per_block()),
                                  .capacity_blocks = static_cast<uint64_t>(nvme->capacity_blocks() + kSparePages)});
}

// Records a sample every interval of the wall clock: queue, batch, HBM use, and per link of the node the
// fraction of the interval the copies crossing it were running.
class Sampler {
 public:
  Sampler(const Scenario& s, const NodeLinks& node, const TieredCache& cache, SchedulerState& state,
          const std::vector<TransferRecord>& transfers, std::vector<TimeSample>& out)
      : interval_(s.sample_interval_s),
        next_(s.sample_interval_s),
        node_(node),
        media_(tier_media(s)),
        cache_(cache),
        state_(state),
        transfers_(transfers),
        out_(out) {}

  void at(double now) {
    while (now >= next_) {
      record(next_);
      next_ += interval_;
    }
  }

 private:
  void record(double time) {
    TimeSample t = sample_state(time, cache_, state_);
    std::vector<double> busy(node_.links().size(), 0);
    for (; seen_ < transfers_.size() && transfers_[seen_].start_s < time; ++seen_) {
      for (int link : node_.route(transfers_[seen_].path, media_)) busy[link] += transfers_[seen_].seconds();
    }
    for (double& b : busy) b = std::min(1.0, b / interval_);
    t.link_utilisation = busy;
    out_.push_back(std::move(t));
  }

  double interval_, next_;
  const NodeLinks& node_;
  std::map<std::string, Medium> media_;
  const TieredCache& cache_;
  SchedulerState& state_;
  const std::vector<TransferRecord>& transfers_;
  std::vector<TimeSample>& out_;
  size_t seen_ = 0;
};

// Forward passes that touch only decode pages, so that the first timed step pays no library setup.
void warm_up(StepRunner& runner, int steps, int64_t max_batch_tokens) {
  for (int i = 0; i < steps; ++i) {
    StepPlan plan;
    plan.prefills.push_back({kWarmupRequest, 0, std::min<int64_t>(512, max_batch_tokens), std::nullopt});
    plan.decodes.push_back({kWarmupRequest, 512});
    plan.tokens = plan.prefills[0].tokens + 1;
    runner.run(plan);
  }
  runner.forget(kWarmupRequest);
}

ForwardConfig forward_config(const Scenario& s, const PageGroup& pool, int64_t pages) {
  ForwardConfig c{.shape = shape_of(s),
                  .block_tokens = static_cast<int>(s.block_tokens),
                  .kv_pages = pages,
                  .max_step_tokens = static_cast<int>(s.max_batch_tokens),
                  .max_sequences = static_cast<int>(s.max_running),
                  .max_pages_per_sequence = static_cast<int>(pages)};
  c.external_kv_pool = reinterpret_cast<uint16_t*>(pool.pool);
  c.external_kv_page_stride = pool.page_stride / 2;
  return c;
}

// What serves on the GPU: one pool of KV pages (the store's first, decode's after them), the tiered store
// repeating the scheduler's cache calls on its pages, and the forward pass over the same pages.
class GpuEngine {
 public:
  GpuEngine(const Scenario& s, const ServeOptions& o)
      : store_pages_(hbm_pages(s)),
        decode_pages_(std::min<int64_t>(kMaxDecodePages, 2 * s.max_running)),
        device_(layout_page_bytes(s.tiers[0].layout, s.block_tokens), store_pages_ + decode_pages_),
        store_device_(device_, store_pages_),
        store_(s.tiers, store_device_, open_nvme(s, o), TieredStoreOptions{.int4_row_elements = s.model.head_dim}),
        backend_(store_),
        forward_(forward_config(s, device_.cache().groups()[0], store_pages_ + decode_pages_), stream_.get()),
        runner_(forward_, stream_.get(), [this](uint64_t id) -> const std::vector<int64_t>& {
          return id == kWarmupRequest ? no_pages_ : backend_.hbm_pages(id);
        }, store_pages_, decode_pages_) {
    backend_.on_release([this](uint64_t id) { runner_.forget(id); });
  }

  StoreBackend& backend() { return backend_; }
  StepRunner& runner() { return runner_; }

 private:
  int64_t store_pages_, decode_pages_;
  GpuDevicePages device_;
  PagePrefix store_device_;
  TieredStore store_;
  StoreBackend backend_;
  gpu::Stream stream_;
  TransformerForward forward_;
  const std::vector<int64_t> no_pages_;
  StepRunner runner_;
};

// Runs the scheduler to the end on the wall clock, each step into `steps`.
void serve_requests(Scheduler& scheduler, GpuEngine& engine, Sampler& sampler,
                    std::vector<StepRecord>& steps) {
  StoreBackend& clock = engine.backend();
  while (!scheduler.finished()) {
    const Decision& d = scheduler.decide();
    if (d.kind == Decision::Kind::kStep) {
      const double start_s = clock.now();
      const double forward_s = engine.runner().run(d.step);
      scheduler.finish_step();
      steps.push_back({.start_s = start_s, .forward_s = forward_s, .end_s = clock.now(), .plan = d.step});
    } else if (d.kind == Decision::Kind::kWait && d.awaited_loads.empty()) {
      // Loads land before the scheduler waits for them (store_backend.h): only an arrival is worth a wait.
      if (!d.next_arrival_s) throw std::logic_error("kvtier-hw serve: nothing runs and nothing will arrive");
      const double wait = *d.next_arrival_s - clock.now();
      if (wait > 0) std::this_thread::sleep_for(std::chrono::duration<double>(wait));
    }
    scheduler.end_iteration();
    sampler.at(clock.now());
  }
}

// The summary in the simulator's keys: each transfer's bytes on every link of the node it crossed.
nlohmann::json summarise_run(const Scenario& s, const NodeLinks& node, const ServeRun& run, double window_s) {
  std::vector<double> link_bytes(node.links().size(), 0);
  const std::map<std::string, Medium> media = tier_media(s);
  for (const TransferRecord& r : run.transfers) {
    for (int link : node.route(r.path, media)) link_bytes[link] += r.bytes;
  }
  return summarise(run.records, run.tier_names, run.link_names, link_bytes, s.slo, window_s);
}

}  // namespace

ServeRun serve_scenario(const Scenario& s, const ServeOptions& o) {
  check_servable(s);
  GpuEngine engine(s, o);
  warm_up(engine.runner(), o.warmup_steps, s.max_batch_tokens);

  ServeRun run;
  for (const TierSpec& t : s.tiers) run.tier_names.push_back(t.name);
  const NodeLinks node(s.hardware, s.gpus);
  for (const NodeLink& l : node.links()) run.link_names.push_back(l.name);
  TieredCache cache(s.tiers);
  WorkloadPlan workload = build_workload(s);
  const CostModel cost = instance_cost_model(s);
  SchedulerState state;
  StoreBackend& backend = engine.backend();
  backend.restart_clock();
  RequestLog records([&run](const RequestRecord& r) { run.records.push_back(r); });
  Scheduler scheduler(scheduler_config(s), cost, cache, *workload.driver, backend, records, state);
  Sampler sampler(s, node, cache, state, backend.transfers(), run.samples);
  serve_requests(scheduler, engine, sampler, run.steps);
  records.close();
  const double elapsed = backend.now();

  run.transfers = backend.transfers();
  run.summary = summarise_run(s, node, run, std::min(workload.window_s, elapsed));
  run.summary["scenario"] = s.name;
  run.summary["workload"] = workload.description;
  run.summary["elapsed_s"] = elapsed;
  run.summary["engine_steps"] = state.steps;
  run.summary["compute_s"] =
      std::accumulate(run.steps.begin(), run.steps.end(), 0.0,
                      [](double sum, const StepRecord& step) { return sum + step.forward_s; });
  run.summary["transfer_s"] = backend.transfer_seconds();
  run.summary["device"] = gpu::current_device_description();
  run.summary["cache_traffic"] = cache_traffic_json(cache);
  return run;
}

}  // namespace kvtier::hw
