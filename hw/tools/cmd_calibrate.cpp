// kvtier-hw calibrate: measures what the simulator needs and writes the calibration JSON. With --steps it
// also times real forward-pass steps of one model (step_probe.h) and fits the cost model's serving step
// costs.
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>

#include "hw/gpu/check.h"
#include "hw/model/card_shape.h"
#include "hw/tools/calibration_run.h"
#include "hw/tools/copy_probe.h"
#include "hw/tools/disk_probe.h"
#include "hw/tools/gemm_probe.h"
#include "hw/tools/hw_commands.h"
#include "hw/tools/kernel_probe.h"
#include "hw/tools/offload_bench.h"
#include "hw/tools/step_probe.h"
#include "hw/tools/tool_support.h"
#include "sim/core/cli_help.h"
#include "sim/core/config_files.h"
#include "sim/core/kv_layout.h"
#include "sim/core/model_card.h"
#include "sim/core/units.h"

namespace kvtier::hw {
namespace {

struct CalibrateArguments {
  std::string hardware;  // --hardware; empty: the device's own card (reference_card_for)
  std::string models = "llama-3.1-8b,llama-3.1-70b";
  int64_t tokens = 4096;
  std::string copy_sizes = "4KiB,16KiB,64KiB,256KiB,1MiB,4MiB,16MiB,64MiB";
  std::string disk_blocks = "4KiB,64KiB,1MiB,4MiB";
  std::string store_blocks = "1MiB,8MiB,32MiB";
  std::string directory = ".";
  bool skip_disk = false;
  bool steps = false;
  std::string step_model = "llama-3.1-8b";
  int64_t step_block_tokens = 256;
  double step_gap_ms = 200;
  StepGapKind step_gap = StepGapKind::kIdle;
  bool throttle = true;
  double throttle_seconds = 10;
  bool throttle_attention = false;
  std::string throttle_attention_step;
  StepSample attention_step = kAttentionThrottleStep;  // --throttle-attention-step, parsed
  std::string extra_steps;
  std::vector<StepSample> extra_step_shapes;  // --extra-steps, parsed
  std::string out;
};

std::vector<DiskSample> measure_disk_grid(const CalibrateArguments& arguments) {
  std::vector<DiskSample> samples;
  for (uint64_t block : parse_size_list("--disk-blocks", arguments.disk_blocks)) {
    for (int depth : {1, 8}) {
      // 2,048 I/Os or 256 MiB, whichever is less: enough for a stable rate, short on a slow disk.
      const uint64_t bytes = std::min<uint64_t>(256ull << 20, block * 2048);
      for (const DiskSample& s : measure_disk(arguments.directory, block, depth, bytes)) samples.push_back(s);
    }
  }
  return samples;
}

// Batches of one block, about 64 MiB and about 1 GiB: the small ones show a batch's fixed time, the
// largest the rate with the queue full, as a long prefix's load keeps it.
std::vector<uint64_t> batch_sizes(uint64_t block_bytes) {
  return {1, std::max<uint64_t>(2, (64ull << 20) / block_bytes),
          std::max<uint64_t>(4, (1ull << 30) / block_bytes)};
}

std::vector<StoreSample> measure_store_grid(const CalibrateArguments& arguments) {
  std::vector<StoreSample> samples;
  for (uint64_t block : parse_size_list("--store-blocks", arguments.store_blocks)) {
    for (const StoreSample& s : measure_store(arguments.directory, block, batch_sizes(block)))
      samples.push_back(s);
  }
  return samples;
}

std::vector<GemmSample> measure_model_gemms(const CalibrateArguments& arguments) {
  std::vector<GemmSample> samples;
  if (!gemm_probe_available()) {
    std::printf("prefill GEMMs: skipped, this build has no vendor BLAS\n");
    return samples;
  }
  for (const std::string& name : split_list(arguments.models)) {
    const ModelCard model = parse_model_card(load_config(name, "models"));
    for (const GemmSample& s : measure_gemms(name, prefill_gemm_shapes(model, arguments.tokens)))
      samples.push_back(s);
  }
  return samples;
}

// A KV block of the step model at --step-block-tokens in bf16: the page a serving run of it offloads.
uint64_t offload_page_bytes(const CalibrateArguments& arguments) {
  const ModelCard model = parse_model_card(load_config(arguments.step_model, "models"));
  return static_cast<uint64_t>(resolve_kv_layout(model, "bf16").bytes_per_token()) *
         static_cast<uint64_t>(arguments.step_block_tokens);
}

// Times the forward pass's steps for the serving fit; the card must be one the forward pass runs.
void measure_forward_steps(const CalibrateArguments& arguments, CalibrationRun& calibration) {
  if (!step_probe_available()) {
    std::printf("forward-pass steps: skipped, this build has no forward pass\n");
    return;
  }
  calibration.step_model = parse_model_card(load_config(arguments.step_model, "models"));
  TransformerShape shape;
  try {
    shape = transformer_shape(calibration.step_model);
  } catch (const std::invalid_argument& e) {
    throw ConfigError(std::string("--step-model: ") + e.what());
  }
  calibration.step_block_tokens = arguments.step_block_tokens;
  calibration.step_gap = {arguments.step_gap, arguments.step_gap_ms * 1e-3};
  calibration.attention_throttle_step = arguments.attention_step;
  ThrottleRuns runs{.seconds = arguments.throttle ? arguments.throttle_seconds : 0.0,
                    .attention = std::nullopt};
  if (arguments.throttle && arguments.throttle_attention) runs.attention = arguments.attention_step;
  StepProbe probe = measure_steps(shape, static_cast<int>(arguments.step_block_tokens), calibration.step_gap,
                                  runs, arguments.extra_step_shapes);
  calibration.steps = std::move(probe.steps);
  calibration.throttle_seconds = std::move(probe.throttle_seconds);
  calibration.attention_throttle_seconds = std::move(probe.attention_throttle_seconds);
  if (arguments.throttle) calibration.throttle_chunk_tokens = kThrottleChunkTokens;
  calibration.attention_tiling = attention_tiling(shape, static_cast<int>(arguments.step_block_tokens));
}

void print_steps(const nlohmann::json& json) {
  if (!json.contains("serving")) return;
  for (const nlohmann::json& s : json["measurements"]["steps"]) {
    const double seconds = s["seconds"].get<double>(), predicted = s["predicted_seconds"].get<double>();
    std::printf(
        "step %-7s %lld x %6lld new after %6lld, %3lld decodes after %6lld: %9.3f ms, model %9.3f ms (%+5.1f "
        "%%)\n",
        s["kind"].get<std::string>().c_str(), s["prefill_sequences"].get<long long>(),
        s["new_tokens"].get<long long>(), s["cached_tokens"].get<long long>(),
        s["decode_sequences"].get<long long>(), s["decode_context"].get<long long>(), seconds * 1e3,
        predicted * 1e3, (predicted / seconds - 1) * 100);
    if (s.contains("attention_seconds")) {
      const double attention = s["attention_seconds"].get<double>();
      const double modelled = s["predicted_attention_seconds"].get<double>();
      std::printf("     its attention alone: %9.3f ms, model %9.3f ms (%+5.1f %%)\n", attention * 1e3, modelled * 1e3,
                  (modelled / attention - 1) * 100);
    }
  }
  std::printf("serving step costs: %s\n", json["serving"].dump().c_str());
}

// --hardware, or the card of the device's GPU.
std::string reference_card(const CalibrateArguments& arguments, const std::string& device) {
  if (!arguments.hardware.empty()) return arguments.hardware;
  try {
    return reference_card_for(device);
  } catch (const std::invalid_argument& e) {
    throw ConfigError(e.what());
  }
}

void run(const CalibrateArguments& arguments) {
  const std::string device = gpu::current_device_description();
  CalibrationRun calibration{
      .command = command_line(),
      .device = device,
      .reference = parse_hardware(load_config(reference_card(arguments, device), "configs/hardware"))};
  std::printf("device: %s (peaks from %s)\n", calibration.device.c_str(), calibration.reference.name.c_str());
  calibration.copies = measure_host_copies(parse_size_list("--copy-sizes", arguments.copy_sizes));
  calibration.copies.push_back(measure_bidirectional_copy(64ull << 20));
  calibration.copies.push_back(measure_device_copy(1ull << 30));
  for (const CopySample& c : calibration.copies) {
    std::printf("copy %-4s %10s  %s\n", to_string(c.direction),
                format_bytes(static_cast<double>(c.bytes)).c_str(), rate_text(c.bytes_per_s).c_str());
  }
  const uint64_t page_bytes = offload_page_bytes(arguments);
  calibration.offloads = measure_offload_batches(page_bytes, batch_sizes(page_bytes));
  for (const OffloadSample& o : calibration.offloads) {
    std::printf("offload %-4s %3llu x %10s  %s\n", to_string(o.direction),
                static_cast<unsigned long long>(o.pages),
                format_bytes(static_cast<double>(o.page_bytes)).c_str(), rate_text(o.bytes_per_s()).c_str());
  }
  calibration.kernels = measure_kernel_rates();
  for (const KernelRate& k : calibration.kernels)
    std::printf("kernel %-24s %s\n", k.name.c_str(), rate_text(k.bytes_per_s).c_str());
  calibration.gemms = measure_model_gemms(arguments);
  for (const GemmSample& g : calibration.gemms) {
    std::printf("gemm %-14s %-8s %6lldx%-6lldx%-6lld %7.1f TFLOP/s\n", g.model.c_str(), g.shape.name.c_str(),
                static_cast<long long>(g.shape.m), static_cast<long long>(g.shape.n),
                static_cast<long long>(g.shape.k), g.flops_per_s() / 1e12);
  }
  if (arguments.steps) measure_forward_steps(arguments, calibration);
  if (!arguments.skip_disk) {
    calibration.disk = measure_disk_grid(arguments);
    for (const DiskSample& d : calibration.disk) {
      std::printf("disk %-5s %10s qd %2d  %s\n", to_string(d.op),
                  format_bytes(static_cast<double>(d.block_bytes)).c_str(), d.queue_depth,
                  rate_text(d.bytes_per_s()).c_str());
    }
    calibration.store = measure_store_grid(arguments);
    for (const StoreSample& s : calibration.store) {
      std::printf("store %-5s %4llu x %10s  %s, %.0f ms CPU per GB\n", to_string(s.op),
                  static_cast<unsigned long long>(s.blocks),
                  format_bytes(static_cast<double>(s.block_bytes)).c_str(),
                  rate_text(s.bytes_per_s()).c_str(), s.cpu_seconds / static_cast<double>(s.bytes()) * 1e12);
    }
  }
  const nlohmann::json json = summarize_calibration(calibration);
  print_steps(json);
  std::printf("hardware overlay: %s\n", json["hardware"].dump().c_str());
  if (!arguments.out.empty()) write_json_file(arguments.out, json);
}

}  // namespace

void add_calibrate_command(CLI::App& app) {
  auto arguments = std::make_shared<CalibrateArguments>();
  CLI::App* command = app.add_subcommand("calibrate",
                                         "Measure copies, kernels, disk, prefill GEMMs and (--steps) "
                                         "forward-pass steps; write the simulator's calibration JSON");
  command->add_option("--hardware", arguments->hardware,
                      "Hardware file whose peaks efficiencies refer to: the device's own GPU (default: the "
                      "built-in card of the GPU the device names, such as h200 or h100-sxm)");
  command->add_option("--models", arguments->models, "Model cards whose prefill GEMMs are timed")
      ->capture_default_str();
  command->add_option("--tokens", arguments->tokens, "Prefill tokens per GEMM")
      ->capture_default_str()
      ->transform(token_count_suffixes())
      ->check(CLI::PositiveNumber);
  command->add_option("--copy-sizes", arguments->copy_sizes, "Host<->device copy sizes")
      ->capture_default_str();
  command->add_option("--disk-blocks", arguments->disk_blocks, "Disk I/O sizes")->capture_default_str();
  command
      ->add_option("--store-blocks", arguments->store_blocks,
                   "Block sizes put and got through the NVMe store")
      ->capture_default_str();
  command->add_option("--dir", arguments->directory, "Directory on the disk to measure")
      ->capture_default_str()
      ->check(CLI::ExistingDirectory);
  command->add_flag("--skip-disk", arguments->skip_disk, "Leave the disk out");
  command->add_flag(
      "--steps", arguments->steps,
      "Time forward-pass steps (prefill, decode, mixed) and fit the cost model's serving step costs");
  command
      ->add_option(
          "--step-block-tokens", arguments->step_block_tokens,
          "Tokens per KV page of the steps --steps times (the serving scenarios' cache.block_tokens)")
      ->capture_default_str()
      ->transform(token_count_suffixes())
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 16));
  command->add_option("--step-model", arguments->step_model, "Model card whose forward pass --steps times")
      ->capture_default_str();
  command
      ->add_option("--step-gap-ms", arguments->step_gap_ms,
                   "Gap before each timed step, so that it starts at the clock serving sees between "
                   "lighter steps (0: back to back, at the clock a sustained load leaves)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 10000.0));
  command
      ->add_option(
          "--step-gap", arguments->step_gap,
          "What the GPU does in the gap: idle (sleeps), or light (decode steps of one sequence, which "
          "keep the clock up at low power)")
      ->transform(CLI::CheckedTransformer(
          std::map<std::string, StepGapKind>{{"idle", StepGapKind::kIdle}, {"light", StepGapKind::kLight}}))
      ->default_str("idle");
  command->add_flag(
      "--throttle,!--no-throttle", arguments->throttle,
      "On by default with --steps (--no-throttle skips it): time back-to-back prefill chunks from "
      "a cool GPU first, fit the power throttle (serving.power) and the step costs at the boost "
      "clock (docs/cost-model.md)");
  command
      ->add_option("--throttle-seconds", arguments->throttle_seconds,
                   "How long each throttle run keeps the GPU busy")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 300.0));
  command->add_flag("--throttle-attention", arguments->throttle_attention,
                    "After the throttle run, time chunks after 32K cached tokens back to back as long, and "
                    "fit prefill attention's own slowdown (serving.power.attention_slowdown)");
  command->add_option(
      "--throttle-attention-step", arguments->throttle_attention_step,
      "The attention run's step instead of 4096:32768: NEW:CACHED, or NEW:CACHED:DECODES:CONTEXT "
      "beside decodes (a serving step's shape, e.g. 8192:32768:40:16384); implies "
      "--throttle-attention");
  command->add_option(
      "--extra-steps", arguments->extra_steps,
      "Steps the probe times and fits beside its own: a comma-separated list of NEW:CACHED or "
      "NEW:CACHED:DECODES:CONTEXT (a workload's own step shapes, e.g. 2048:22528:9:26624)");
  command->add_option("--out", arguments->out, "Write the calibration JSON to this file");
  command->callback([arguments, command] {
    if (!arguments->throttle_attention_step.empty()) {
      try {
        arguments->attention_step = parse_step_shape(arguments->throttle_attention_step);
      } catch (const std::invalid_argument& e) {
        throw CLI::ValidationError("--throttle-attention-step", e.what());
      }
      arguments->throttle_attention = true;
    }
    for (const std::string& shape : split_list(arguments->extra_steps)) {
      try {
        arguments->extra_step_shapes.push_back(parse_step_shape(shape));
      } catch (const std::invalid_argument& e) {
        throw CLI::ValidationError("--extra-steps", e.what());
      }
    }
    if (!arguments->extra_step_shapes.empty() && !arguments->steps)
      throw CLI::ValidationError("--extra-steps", "the probe's steps are timed only with --steps");
    if (!arguments->throttle && (command->count("--throttle-seconds") > 0 || arguments->throttle_attention)) {
      throw CLI::ValidationError(
          "--throttle-seconds and --throttle-attention(-step) time the throttle runs, which --no-throttle "
          "leaves out");
    }
    run(*arguments);
  });
}

void add_refit_command(CLI::App& app) {
  struct RefitArguments {
    std::string calibration, step_model = "llama-3.1-8b", hardware, out;
  };
  auto arguments = std::make_shared<RefitArguments>();
  CLI::App* command = app.add_subcommand(
      "refit", "Fit a calibration's serving step costs again from its stored measurements (no GPU needed)");
  command
      ->add_option("calibration", arguments->calibration,
                   "The calibration JSON kvtier-hw calibrate --steps wrote")
      ->required();
  command->add_option("--step-model", arguments->step_model, "Model card whose forward pass the steps ran")
      ->capture_default_str();
  command->add_option(
      "--hardware", arguments->hardware,
      "Hardware file whose peaks efficiencies refer to (default: the card of the file's device)");
  command->add_option("--out", arguments->out, "Write the refitted calibration JSON to this file")
      ->required();
  command->callback([arguments] {
    const Calibration measured = load_calibration(arguments->calibration);
    Calibration refitted;
    try {
      const std::string card =
          arguments->hardware.empty() ? reference_card_for(measured.device) : arguments->hardware;
      refitted = refit_serving(measured, parse_model_card(load_config(arguments->step_model, "models")),
                               parse_hardware(load_config(card, "configs/hardware")), command_line());
    } catch (const std::invalid_argument& e) {
      throw ConfigError(arguments->calibration + ": " + e.what());
    }
    const nlohmann::json json = refitted;
    print_steps(json);
    write_json_file(arguments->out, json);
  });
}

}  // namespace kvtier::hw
