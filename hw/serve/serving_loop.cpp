#include "hw/serve/serving_loop.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <stdexcept>
#include <thread>
#include <unistd.h>

#include "hw/gpu/check.h"
#include "hw/gpu/device_buffer.h"
#include "hw/kernels/page_copy.h"
#include "hw/model/transformer_shape.h"
#include "hw/serve/step_runner.h"
#include "hw/serve/store_backend.h"
#include "hw/store/gpu_device_pages.h"
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
  void synchronize() override { all_.synchronize(); }

 private:
  DevicePages& all_;
  int64_t count_;
};

constexpr int64_t kSparePages = 64;  // beyond HBM's capacity, so that the store's copies batch
constexpr int64_t kMaxDecodePages = 64;

void check_servable(const Scenario& s) {
  const ConfigNode& tiers = s.config->child("cache").child("tiers");
  const std::vector<ConfigNode> elements = tiers.elements();
  for (size_t t = 1; t < s.tiers.size(); ++t) {
    if (s.tiers[t].medium == Medium::kRemote)
      elements[t].child("medium").fail("kvtier-hw serve has no remote pool; use dram or nvme");
    if (s.tiers[t].layout != s.tiers[0].layout)
      elements[t].child("kv").fail("kvtier-hw serve's store moves pages unchanged, so every tier needs HBM's "
                                   "layout, " + s.tiers[0].layout.name);
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

std::unique_ptr<NvmeStore> open_nvme(const Scenario& s, const ServeOptions& o, uint64_t page_bytes) {
  auto nvme = std::find_if(s.tiers.begin(), s.tiers.end(), [](const TierSpec& t) { return t.medium == Medium::kNvme; });
  if (nvme == s.tiers.end()) return nullptr;
  const std::string path =
      (std::filesystem::path(o.nvme_directory) / ("kvtier-serve-" + std::to_string(::getpid()) + ".store")).string();
  return NvmeStore::create(path, {.block_bytes = page_bytes,
                                  .capacity_blocks = static_cast<uint64_t>(nvme->capacity_blocks() + kSparePages)});
}

// Records a sample every interval of the wall clock: queue, batch, HBM use, and per transfer path the
// fraction of the interval its copies were running.
class Sampler {
 public:
  Sampler(double interval_s, const TieredCache& cache, SchedulerState& state,
          const std::vector<TransferRecord>& transfers, std::vector<TimeSample>& out)
      : interval_(interval_s), next_(interval_s), cache_(cache), state_(state), transfers_(transfers), out_(out) {}

  void at(double now, std::vector<std::string>& paths) {
    while (now >= next_) {
      record(next_, paths);
      next_ += interval_;
    }
  }

 private:
  void record(double time, std::vector<std::string>& paths) {
    TimeSample t;
    t.time_s = time;
    const double block_bytes = static_cast<double>(cache_.tier(0).bytes_per_block());
    t.hbm_cache_bytes = static_cast<double>(cache_.used_blocks(0) - cache_.pinned_blocks(0)) * block_bytes;
    t.hbm_used_bytes = static_cast<double>(cache_.used_blocks(0)) * block_bytes + state_.decode_kv_bytes;
    t.queued = state_.queued;
    t.running = state_.running;
    std::vector<double> busy(paths.size(), 0);
    for (; seen_ < transfers_.size() && transfers_[seen_].start_s < time; ++seen_) {
      const TransferRecord& r = transfers_[seen_];
      auto at = std::find(paths.begin(), paths.end(), r.path);
      if (at == paths.end()) {
        paths.push_back(r.path);
        busy.push_back(0);
        at = paths.end() - 1;
      }
      busy[static_cast<size_t>(at - paths.begin())] += r.seconds();
    }
    for (double& b : busy) b = std::min(1.0, b / interval_);
    t.link_utilisation = busy;
    for (int64_t& hits : state_.hits_since_sample) {
      t.tier_hit_rate.push_back(state_.input_since_sample > 0
                                    ? static_cast<double>(hits) / static_cast<double>(state_.input_since_sample)
                                    : 0);
      hits = 0;
    }
    state_.input_since_sample = 0;
    out_.push_back(std::move(t));
  }

  double interval_, next_;
  const TieredCache& cache_;
  SchedulerState& state_;
  const std::vector<TransferRecord>& transfers_;
  std::vector<TimeSample>& out_;
  size_t seen_ = 0;
};

// Forward passes that touch only decode pages, so that the first timed step pays no library setup.
void warm_up(StepRunner& runner, int steps, int64_t max_batch_tokens) {
  constexpr uint64_t kWarmupRequest = std::numeric_limits<uint64_t>::max();
  for (int i = 0; i < steps; ++i) {
    StepPlan plan;
    plan.prefills.push_back({kWarmupRequest, 0, std::min<int64_t>(512, max_batch_tokens), std::nullopt});
    plan.decodes.push_back({kWarmupRequest, 512});
    plan.tokens = plan.prefills[0].tokens + 1;
    runner.run(plan);
  }
  runner.forget(kWarmupRequest);
}

}  // namespace

ServeRun serve_scenario(const Scenario& s, const ServeOptions& o) {
  check_servable(s);
  const TransformerShape shape = shape_of(s);
  const int64_t store_pages = hbm_pages(s);
  const int64_t decode_pages = std::min<int64_t>(kMaxDecodePages, 2 * s.max_running);
  GpuDevicePages device(layout_page_bytes(s.tiers[0].layout, s.block_tokens), store_pages + decode_pages);
  PagePrefix store_device(device, store_pages);
  TieredStore store(s.tiers, store_device, open_nvme(s, o, device.page_bytes()));
  StoreBackend backend(store);

  gpu::Stream stream;
  const PageGroup& pool = device.cache().groups()[0];
  ForwardConfig fc{.shape = shape, .block_tokens = static_cast<int>(s.block_tokens), .kv_pages = store_pages + decode_pages,
                   .max_step_tokens = static_cast<int>(s.max_batch_tokens), .max_sequences = static_cast<int>(s.max_running),
                   .max_pages_per_sequence = static_cast<int>(store_pages + decode_pages)};
  fc.external_kv_pool = reinterpret_cast<uint16_t*>(pool.pool);
  fc.external_kv_page_stride = pool.page_stride / 2;
  TransformerForward forward(fc, stream.get());
  StepRunner runner(forward, stream.get(), [&](uint64_t id) -> const std::vector<int64_t>& {
    static const std::vector<int64_t> none;
    return id == std::numeric_limits<uint64_t>::max() ? none : backend.hbm_pages(id);
  }, store_pages, decode_pages);
  warm_up(runner, o.warmup_steps, s.max_batch_tokens);

  ServeRun run;
  for (const TierSpec& t : s.tiers) run.tier_names.push_back(t.name);
  TieredCache cache(s.tiers);
  WorkloadPlan workload = build_workload(s);
  const CostModel cost = instance_cost_model(s);
  SchedulerState state;
  backend.on_release([&](uint64_t id) { runner.forget(id); });
  backend.restart_clock();
  Scheduler scheduler(scheduler_config(s), cost, cache, *workload.driver, backend, run.records, state);
  Sampler sampler(s.sample_interval_s, cache, state, backend.transfers(), run.samples);
  double compute_s = 0;
  while (!scheduler.finished()) {
    const Decision& d = scheduler.decide();
    if (d.kind == Decision::Kind::kStep) {
      compute_s += runner.run(d.step);
      scheduler.finish_step();
    } else if (d.kind == Decision::Kind::kWait) {
      if (!d.next_arrival_s) throw std::logic_error("kvtier-hw serve: nothing runs and nothing will arrive");
      const double wait = *d.next_arrival_s - backend.now();
      if (wait > 0) std::this_thread::sleep_for(std::chrono::duration<double>(wait));
    }
    scheduler.end_iteration();
    sampler.at(backend.now(), run.link_names);
  }
  const double elapsed = backend.now();

  run.transfers = backend.transfers();
  std::vector<double> link_bytes(run.link_names.size(), 0);
  for (const TransferRecord& r : run.transfers) {
    auto at = std::find(run.link_names.begin(), run.link_names.end(), r.path);
    if (at == run.link_names.end()) {
      run.link_names.push_back(r.path);
      link_bytes.push_back(0);
      at = run.link_names.end() - 1;
    }
    link_bytes[static_cast<size_t>(at - run.link_names.begin())] += r.bytes;
  }
  for (TimeSample& t : run.samples) t.link_utilisation.resize(run.link_names.size(), 0);
  run.summary = summarise(run.records, run.tier_names, run.link_names, link_bytes, s.slo,
                          std::min(workload.window_s, elapsed));
  run.summary["scenario"] = s.name;
  run.summary["workload"] = workload.description;
  run.summary["elapsed_s"] = elapsed;
  run.summary["engine_steps"] = state.steps;
  run.summary["compute_s"] = compute_s;
  run.summary["transfer_s"] = backend.transfer_seconds();
  run.summary["device"] = gpu::current_device_description();
  run.summary["cache_traffic"] = cache_traffic_json(cache);
  return run;
}

}  // namespace kvtier::hw
