// kvtier-hw breakeven: does loading a cached prefix beat recomputing it, measured on the GPU (validation
// case (e)). For each prefix length, KV layout of the lower tier and path (pinned DRAM, or an NVMe file read
// through the store's staging pages), breakeven_probe.h times a miss (a one-step prefill of prefix and new
// tokens by TransformerForward) and a hit (the tiered store's admit() promoting the prefix, then the prefill
// of the new tokens after it), the median of --repeats. `kvtier breakeven --compare` holds the cost model's
// crossover to the file this writes. HBM holds bf16 (the forward pass reads it); --kv sets the lower tier's
// layout (int4: the store quantizes on the way down and dequantizes on promotion, inside the timed admit()),
// which the store refuses with its own error where it cannot convert (every store is built once before
// anything is timed, so a refused layout costs no measuring).
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>

#include "hw/gpu/check.h"
#include "hw/gpu/device_buffer.h"
#include "hw/model/card_shape.h"
#include "hw/model/forward.h"
#include "hw/model/prompt_tokens.h"
#include "hw/store/gpu_device_pages.h"
#include "hw/tools/breakeven_probe.h"
#include "hw/tools/hw_commands.h"
#include "hw/tools/tool_support.h"
#include "sim/core/cli_help.h"
#include "sim/core/config_files.h"

namespace kvtier::hw {
namespace {

constexpr int64_t kSpareBlocks = 64;  // beyond each tier's capacity, so that the store's copies batch

struct BreakevenArguments {
  std::string model;
  std::string kv = "bf16,int4";
  std::string paths = "dram,nvme";
  std::string contexts;
  std::string sweep;
  int64_t new_tokens = 1024;
  int64_t block_tokens = 256;
  int repeats = 3;
  std::string nvme_directory = ".";
  std::string out;
};

// One (layout, path) series' tiers: HBM in bf16, the path's medium below it in the layout --kv names,
// each holding `blocks` blocks.
std::vector<TierSpec> series_tiers(const ModelCard& card, const std::string& kv, Medium medium,
                                   int64_t blocks, int64_t block_tokens) {
  auto tier = [&](Medium m, const KvLayout& layout) {
    TierSpec t;
    t.name = std::string(medium_name(m));
    t.medium = m;
    t.layout = layout;
    t.block_tokens = block_tokens;
    t.capacity_bytes = blocks * layout.bytes_per_block(block_tokens);
    return t;
  };
  return {tier(Medium::kHbm, resolve_kv_layout(card, "bf16")), tier(medium, resolve_kv_layout(card, kv))};
}

Medium parse_path(const std::string& name) {
  const std::optional<Medium> medium = parse_medium(name);
  if (!medium || (*medium != Medium::kDram && *medium != Medium::kNvme)) {
    throw ConfigError("--paths: expected dram or nvme, got '" + name + "'");
  }
  return *medium;
}

// The forward pass as the serving loop runs a prefill chunk: one sequence, its pages the store's.
class ForwardPrefill : public Prefill {
 public:
  ForwardPrefill(TransformerForward& forward, gpuStream_t stream) : forward_(forward), stream_(stream) {}

  double run(int64_t cached_tokens, int64_t new_tokens, std::span<const int64_t> pages) override {
    HostSequence sequence{static_cast<int>(new_tokens), static_cast<int>(cached_tokens),
                          std::vector<int>(pages.begin(), pages.end())};
    token_ids_.clear();
    append_prompt_tokens(token_ids_, 0, cached_tokens, new_tokens, forward_.config().shape.vocab);
    const auto start = std::chrono::steady_clock::now();
    forward_.step(std::span<const HostSequence>(&sequence, 1), token_ids_);
    KVTIER_GPU_CHECK(gpuStreamSynchronize(stream_));
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

 private:
  TransformerForward& forward_;
  gpuStream_t stream_;
  std::vector<int> token_ids_;
};

// The GPU side every series shares: the page pool (the store's HBM tier) and the forward pass over it.
struct Machine {
  Machine(const ModelCard& card, int64_t blocks, int64_t max_step_tokens, int64_t block_tokens)
      : device(layout_page_bytes(resolve_kv_layout(card, "bf16"), block_tokens), blocks + kSpareBlocks),
        forward(forward_config(card, blocks, max_step_tokens, block_tokens), stream.get()),
        prefill(forward, stream.get()) {}

  ForwardConfig forward_config(const ModelCard& card, int64_t blocks, int64_t max_step_tokens,
                               int64_t block_tokens) const {
    const PageGroup& pool = device.cache().groups()[0];
    ForwardConfig c{.shape = transformer_shape(card),
                    .block_tokens = static_cast<int>(block_tokens),
                    .kv_pages = device.page_count(),
                    .max_step_tokens = static_cast<int>(max_step_tokens),
                    .max_sequences = 1,
                    .max_pages_per_sequence = static_cast<int>(blocks)};
    c.external_kv_pool = reinterpret_cast<uint16_t*>(pool.pool);
    c.external_kv_page_stride = pool.page_stride / 2;
    return c;
  }

  GpuDevicePages device;
  gpu::Stream stream;
  TransformerForward forward;
  ForwardPrefill prefill;
};

struct Series {
  std::string kv;
  Medium path;
  std::string label() const { return kv + " from " + std::string(medium_name(path)); }
};

// A store for one series, its NVMe file (when the path is NVMe) in --nvme-dir, removed with the store.
std::unique_ptr<TieredStore> open_store(const BreakevenArguments& a, const ModelCard& card, const Series& s,
                                        Machine& machine, int64_t blocks) {
  try {
    std::vector<TierSpec> tiers = series_tiers(card, s.kv, s.path, blocks, a.block_tokens);
    std::unique_ptr<NvmeStore> nvme;
    if (s.path == Medium::kNvme) {
      const std::string file = (std::filesystem::path(a.nvme_directory) /
                                ("kvtier-breakeven-" + std::to_string(::getpid()) + ".store"))
                                   .string();
      nvme = NvmeStore::create(file, {.block_bytes = static_cast<uint64_t>(tiers[1].bytes_per_block()),
                                      .capacity_blocks = static_cast<uint64_t>(blocks + kSpareBlocks)});
    }
    return std::make_unique<TieredStore>(std::move(tiers), machine.device, std::move(nvme),
                                         TieredStoreOptions{.staging_pages = kSpareBlocks,
                                                            .spare_dram_pages = kSpareBlocks,
                                                            .int4_row_elements = card.head_dim});
  } catch (const StoreError& e) {
    throw std::runtime_error(s.label() + ": " + e.what());
  }
}

void measure_series(const BreakevenArguments& a, const ModelCard& card, const Series& s, Machine& machine,
                    const std::vector<int64_t>& lengths, int64_t blocks, SweepRecord& record) {
  const std::unique_ptr<TieredStore> store = open_store(a, card, s, machine, blocks);
  BreakevenProbe probe(*store, machine.prefill, a.block_tokens, a.new_tokens);
  probe.measure(lengths.front());  // untimed: first calls pay library setup and page faults
  for (int64_t prefix : lengths) {
    SweepPoint point{s.kv, std::string(medium_name(s.path)), prefix, {}};
    for (int r = 0; r < a.repeats; ++r) point.samples.push_back(probe.measure(prefix));
    const BreakevenSample m = median_sample(point.samples);
    std::cerr << "kvtier-hw breakeven: " << s.label() << ", " << prefix << " tokens: load " << m.load_s
              << " s, hit " << m.hit_s << " s, miss " << m.miss_s << " s ("
              << (m.hit_s < m.miss_s ? "load" : "recompute") << " wins)\n";
    record.points.push_back(std::move(point));
  }
}

void run_breakeven(const BreakevenArguments& a) {
  const ModelCard card = parse_model_card(load_config(a.model, "models"));
  try {
    (void)transformer_shape(card);
  } catch (const std::invalid_argument& e) {
    throw ConfigError(std::string("--model: ") + e.what());
  }
  const std::vector<int64_t> lengths =
      a.sweep.empty() ? parse_contexts(a.contexts, a.block_tokens) : parse_sweep(a.sweep, a.block_tokens);
  std::vector<Series> series;
  for (const std::string& kv : split_list(a.kv)) {
    (void)resolve_kv_layout(card, kv);
    for (const std::string& path : split_list(a.paths)) series.push_back({kv, parse_path(path)});
  }
  const int64_t blocks = (lengths.back() + a.new_tokens + a.block_tokens - 1) / a.block_tokens;
  Machine machine(card, blocks, lengths.back() + a.new_tokens, a.block_tokens);
  for (const Series& s : series) open_store(a, card, s, machine, 1);  // refused layouts fail here, untimed

  SweepRecord record{
      command_line(), gpu::current_device_description(), a.model, "bf16", a.block_tokens, a.new_tokens, {}};
  for (const Series& s : series) measure_series(a, card, s, machine, lengths, blocks, record);
  write_json_file(a.out, sweep_json(record));
}

}  // namespace

void add_breakeven_command(CLI::App& app) {
  auto a = std::make_shared<BreakevenArguments>();
  CLI::App* command = app.add_subcommand(
      "breakeven",
      "Time loading a cached prefix (DRAM, NVMe) against recomputing it, for kvtier breakeven --compare");
  command->add_option("--model", a->model, "Model card file or built-in name (a dense GQA model)")
      ->required();
  command->add_option("--kv", a->kv, "Lower tier's KV layouts, comma-separated (HBM holds bf16)")
      ->capture_default_str();
  command->add_option("--paths", a->paths, "Where the prefix is loaded from: dram, nvme")
      ->capture_default_str();
  auto* contexts =
      command->add_option("--contexts", a->contexts, "Prefix lengths: 1K,4K,... (rounded down to blocks)");
  auto* sweep = command->add_option("--sweep", a->sweep, "Prefix lengths FIRST:LAST:RATIO, e.g. 1K:64K:1.25");
  contexts->excludes(sweep);
  sweep->excludes(contexts);
  command->add_option("--new-tokens", a->new_tokens, "New (uncached) tokens after the prefix")
      ->capture_default_str()
      ->transform(token_count_suffixes())
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  command->add_option("--block-tokens", a->block_tokens, "Tokens per block of the store")
      ->capture_default_str()
      ->transform(token_count_suffixes())
      ->check(CLI::Range(1, 1 << 16));
  command->add_option("--repeats", a->repeats, "Measurements per point (the median is kept)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  command
      ->add_option("--nvme-dir", a->nvme_directory,
                   "Folder of the NVMe tier's store file (removed at the end)")
      ->capture_default_str();
  command->add_option("--out", a->out, "Result JSON file")->required();
  command->callback([a, contexts, sweep] {
    if (contexts->count() == 0 && sweep->count() == 0)
      throw ConfigError("breakeven: give --contexts or --sweep");
    run_breakeven(*a);
  });
}

}  // namespace kvtier::hw
