#include "hw/tools/calibration_run.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>

#include "hw/tools/link_fit.h"
#include "hw/tools/step_probe.h"
#include "sim/core/kv_layout.h"

namespace kvtier::hw {
namespace {

using nlohmann::json;

std::vector<TransferTiming> copy_timings(const std::vector<CopySample>& copies, CopyDirection direction) {
  std::vector<TransferTiming> timings;
  for (const CopySample& c : copies) {
    if (c.direction == direction) timings.push_back({c.bytes, c.seconds});
  }
  return timings;
}

// The recorded rate of the largest copy in one direction (a device copy counts bytes read and written).
double largest_transfer_rate(const std::vector<CopySample>& copies, CopyDirection direction) {
  const CopySample* best = nullptr;
  for (const CopySample& c : copies) {
    if (c.direction == direction && (best == nullptr || c.bytes > best->bytes)) best = &c;
  }
  return best == nullptr ? 0 : best->bytes_per_s;
}

std::vector<TransferTiming> offload_timings(const std::vector<OffloadSample>& batches,
                                            CopyDirection direction) {
  std::vector<TransferTiming> timings;
  for (const OffloadSample& b : batches) {
    if (b.direction == direction) timings.push_back({b.bytes(), b.seconds});
  }
  return timings;
}

// A link from its timings in one direction: the rate of the largest transfer (what the hardware file calls
// its bandwidth) and the latency of latency + bytes / bandwidth fitted to all of them.
void fit_direction(const std::vector<TransferTiming>& timings, std::optional<double>& bandwidth,
                   std::optional<double>& latency) {
  const TransferTiming* largest = &timings.front();
  for (const TransferTiming& t : timings) {
    if (t.bytes > largest->bytes) largest = &t;
  }
  bandwidth = static_cast<double>(largest->bytes) / largest->seconds;
  latency = fit_link(timings).latency;
}

// From the store's offload and reload batches where the run has two each way, else from plain copies. A
// batch is what the simulator sends over a link as one transfer, and on the H200 served offloads took a
// fixed ~110 us per batch beside the bytes at the copies' rate (the page ids' upload, the first gather,
// the wait), where a plain copy's latency is 2 us. One latency per direction: small copies to the host
// took 1.7-2.0 us and to the device 2.6-2.9 us, and their mean missed 16 KiB copies to the host by 32 %.
void add_pcie(const CalibrationRun& run, MeasuredHardware& hardware) {
  auto h2d = offload_timings(run.offloads, CopyDirection::kHostToDevice);
  auto d2h = offload_timings(run.offloads, CopyDirection::kDeviceToHost);
  if (h2d.size() < 2 || d2h.size() < 2) {
    h2d = copy_timings(run.copies, CopyDirection::kHostToDevice);
    d2h = copy_timings(run.copies, CopyDirection::kDeviceToHost);
  }
  if (h2d.size() < 2 || d2h.size() < 2) return;
  fit_direction(h2d, hardware.pcie_h2d_bandwidth, hardware.pcie_h2d_latency);
  fit_direction(d2h, hardware.pcie_d2h_bandwidth, hardware.pcie_d2h_latency);
}

// The raw O_DIRECT grid: the best rate each way, the latency from the one-I/O-in-flight reads.
void add_raw_disk(const CalibrationRun& run, MeasuredHardware& hardware) {
  double best_read = 0, best_write = 0;
  std::vector<TransferTiming> single_reads;
  for (const DiskSample& d : run.disk) {
    (d.op == DiskOp::kRead ? best_read : best_write) =
        std::max(d.op == DiskOp::kRead ? best_read : best_write, d.bytes_per_s());
    // One I/O in flight: each takes latency + block / bandwidth.
    if (d.op == DiskOp::kRead && d.queue_depth == 1) {
      single_reads.push_back({d.block_bytes, d.seconds / static_cast<double>(d.bytes / d.block_bytes)});
    }
  }
  if (best_read == 0 || best_write == 0) return;
  hardware.nvme_read_bandwidth = best_read;
  hardware.nvme_write_bandwidth = best_write;
  if (single_reads.size() >= 2) hardware.nvme_latency = fit_link(single_reads).latency;
}

// The store's batches. As for PCIe, the bandwidth is the rate of the largest transfers (here every block
// size's largest batch, together), which keep the store's queue full as a long prefix's load does; a small
// batch leaves the disk part idle, and a fit to all of them read the H200's disk 20 % slow. The latency comes
// from latency + bytes / bandwidth fitted to the gets; the CPU per GB from every batch each way.
void add_store(const CalibrationRun& run, MeasuredHardware& hardware) {
  std::vector<TransferTiming> reads;
  std::map<std::pair<bool, uint64_t>, const StoreSample*> largest;  // (read, block size) -> largest batch
  double cpu[2] = {0, 0}, bytes[2] = {0, 0};
  for (const StoreSample& s : run.store) {
    const bool read = s.op == DiskOp::kRead;
    if (read) reads.push_back({s.bytes(), s.seconds});
    const StoreSample*& big = largest[{read, s.block_bytes}];
    if (big == nullptr || s.blocks > big->blocks) big = &s;
    cpu[read] += s.cpu_seconds;
    bytes[read] += static_cast<double>(s.bytes());
  }
  if (reads.size() < 2 || bytes[0] == 0) return;
  double big_bytes[2] = {0, 0}, big_seconds[2] = {0, 0};
  for (const auto& [key, s] : largest) {
    big_bytes[key.first] += static_cast<double>(s->bytes());
    big_seconds[key.first] += s->seconds;
  }
  hardware.nvme_read_bandwidth = big_bytes[1] / big_seconds[1];
  hardware.nvme_write_bandwidth = big_bytes[0] / big_seconds[0];
  hardware.nvme_latency = fit_link(reads).latency;
  hardware.nvme_store_read_cpu_per_gb = cpu[1] / bytes[1] * 1e9;
  hardware.nvme_store_write_cpu_per_gb = cpu[0] / bytes[0] * 1e9;
}

void add_nvme(const CalibrationRun& run, MeasuredHardware& hardware) {
  add_raw_disk(run, hardware);
  add_store(run, hardware);
}

void add_gpu(const CalibrationRun& run, MeasuredHardware& hardware) {
  double flops = 0, seconds = 0;
  for (const GemmSample& g : run.gemms) {
    flops += g.shape.flops();
    seconds += g.seconds;
  }
  if (seconds > 0 && run.reference.gpu.bf16_flops > 0)
    hardware.prefill_mfu = flops / seconds / run.reference.gpu.bf16_flops;
  const double device_copy = largest_transfer_rate(run.copies, CopyDirection::kDeviceToDevice);
  if (device_copy > 0 && run.reference.gpu.hbm_bandwidth > 0) {
    hardware.memory_bandwidth_efficiency = device_copy / run.reference.gpu.hbm_bandwidth;
  }
}

// One JSON object per sample, in order.
template <typename Samples, typename Row>
json rows_of(const Samples& samples, Row row) {
  json rows = json::array();
  for (const auto& sample : samples) rows.push_back(row(sample));
  return rows;
}

json measurements_json(const CalibrationRun& run) {
  return {{"copy", rows_of(run.copies,
                           [](const CopySample& c) -> json {
                             return {{"direction", to_string(c.direction)},
                                     {"bytes", c.bytes},
                                     {"seconds", c.seconds},
                                     {"bytes_per_s", c.bytes_per_s}};
                           })},
          {"offload", rows_of(run.offloads,
                              [](const OffloadSample& o) -> json {
                                return {{"direction", to_string(o.direction)},
                                        {"page_bytes", o.page_bytes},
                                        {"pages", o.pages},
                                        {"seconds", o.seconds},
                                        {"bytes_per_s", o.bytes_per_s()}};
                              })},
          {"disk", rows_of(run.disk,
                           [](const DiskSample& d) -> json {
                             return {{"op", to_string(d.op)},        {"block_bytes", d.block_bytes},
                                     {"queue_depth", d.queue_depth}, {"bytes", d.bytes},
                                     {"seconds", d.seconds},         {"bytes_per_s", d.bytes_per_s()}};
                           })},
          {"store", rows_of(run.store,
                            [](const StoreSample& s) -> json {
                              return {{"op", to_string(s.op)},        {"block_bytes", s.block_bytes},
                                      {"blocks", s.blocks},           {"seconds", s.seconds},
                                      {"cpu_seconds", s.cpu_seconds}, {"bytes_per_s", s.bytes_per_s()}};
                            })},
          {"gemm", rows_of(run.gemms, [](const GemmSample& g) -> json {
             return {{"model", g.model},
                     {"name", g.shape.name},
                     {"m", g.shape.m},
                     {"n", g.shape.n},
                     {"k", g.shape.k},
                     {"seconds", g.seconds},
                     {"flops_per_s", g.flops_per_s()}};
           })}};
}

// The share of a step's boost-clock time that is prefill attention.
double attention_share(const CostModel& cost, const StepSample& step) {
  return cost.prefill_attention_seconds(step.work()) / cost.step_seconds(step.work());
}

// The step costs of the model the steps ran, with the weights read at the measured HBM efficiency.
void add_serving(const CalibrationRun& run, Calibration& calibration) {
  if (run.steps.empty()) return;
  HardwareConfig hardware = run.reference;
  overlay_calibration(calibration, hardware);
  // The probe's forward pass ran on one GPU. A card of a node (the H100's and the MI355X's count 8) would
  // have the cost model spread each step's work over eight, and the fit read the GPU eight times slower.
  hardware.gpu.count = 1;
  const double kv_bytes_per_token =
      static_cast<double>(resolve_kv_layout(run.step_model, "bf16").bytes_per_token());
  std::optional<PowerThrottle> throttle;
  if (!run.throttle_seconds.empty()) {
    throttle = fit_throttle(run.throttle_seconds);
    calibration.measurements["throttle"] = {{"chunk_tokens", run.throttle_chunk_tokens},
                                            {"seconds", run.throttle_seconds},
                                            {"onset_s", throttle->onset_s},
                                            {"slowdown", throttle->slowdown}};
  }
  StepFit fit =
      fit_step_costs(run.step_model, hardware, kv_bytes_per_token, run.steps, run.attention_tiling, throttle);
  if (throttle && !run.attention_throttle_seconds.empty()) {
    const PowerThrottle attention_run =
        fit_long_step_throttle(run.attention_throttle_seconds, throttle->onset_s);
    const StepSample chunk{.prefill_sequences = 1, .new_tokens = run.throttle_chunk_tokens};
    const StepSample& step = run.attention_throttle_step;
    calibration.measurements["throttle_attention"] = {{"new_tokens", step.new_tokens},
                                                      {"cached_tokens", step.cached_tokens},
                                                      {"decode_sequences", step.decode_sequences},
                                                      {"decode_context", step.decode_context},
                                                      {"seconds", run.attention_throttle_seconds},
                                                      {"onset_s", attention_run.onset_s},
                                                      {"slowdown", attention_run.slowdown}};
    // Each run's attention share comes from the costs fitted with the throttle before: twice is enough
    // for the shares to settle (they move the boost-clock times of the probe's few heating steps only).
    const PowerThrottle chunk_run = *throttle;
    for (int round = 0; round < 2; ++round) {
      const CostModel fitted(run.step_model, hardware, kv_bytes_per_token, fit.costs);
      throttle = split_throttle(chunk_run, attention_share(fitted, chunk), attention_run,
                                attention_share(fitted, step));
      fit = fit_step_costs(run.step_model, hardware, kv_bytes_per_token, run.steps, run.attention_tiling,
                           throttle);
    }
  }
  calibration.serving = ServingCalibration{.model = run.step_model.name, .costs = fit.costs};
  calibration.measurements["steps"] = step_measurements_json(run.steps, fit);
  calibration.measurements["step_block_tokens"] = run.step_block_tokens;
  calibration.measurements["step_gap"] = step_gap_name(run.step_gap.kind);
  calibration.measurements["step_gap_s"] = run.step_gap.seconds;
}

}  // namespace

Calibration summarize_calibration(const CalibrationRun& run) {
  Calibration calibration{.tool = "kvtier-hw calibrate",
                          .command = run.command,
                          .device = run.device,
                          .reference_hardware = run.reference.name,
                          .measurements = measurements_json(run)};
  add_gpu(run, calibration.hardware);
  add_pcie(run, calibration.hardware);
  add_nvme(run, calibration.hardware);
  for (const KernelRate& k : run.kernels) add_kernel_rate(calibration.kernels, k.name, k.bytes_per_s);
  add_serving(run, calibration);
  return calibration;
}

namespace {

const json& measurement(const json& measurements, const char* key) {
  if (!measurements.contains(key))
    throw std::invalid_argument(std::string("calibration refit: measurements.") + key + " is missing");
  return measurements.at(key);
}

std::vector<StepSample> stored_steps(const json& steps) {
  std::vector<StepSample> samples;
  for (const json& s : steps) {
    try {
      samples.push_back({.prefill_sequences = s.at("prefill_sequences").get<int64_t>(),
                         .new_tokens = s.at("new_tokens").get<int64_t>(),
                         .cached_tokens = s.at("cached_tokens").get<int64_t>(),
                         .decode_sequences = s.at("decode_sequences").get<int64_t>(),
                         .decode_context = s.at("decode_context").get<int64_t>(),
                         .seconds = s.at("seconds").get<double>(),
                         .attention_seconds = s.value("attention_seconds", 0.0)});
    } catch (const json::exception& e) {
      throw std::invalid_argument("calibration refit: measurements.steps[" + std::to_string(samples.size()) +
                                  "]: " + e.what());
    }
  }
  return samples;
}

// The run a calibration file's step measurements came from, as add_serving reads it.
CalibrationRun stored_step_run(const Calibration& calibration, const ModelCard& step_model,
                               const HardwareConfig& reference) {
  const json& m = calibration.measurements;
  CalibrationRun run{.command = calibration.command, .device = calibration.device, .reference = reference};
  run.step_model = step_model;
  run.steps = stored_steps(measurement(m, "steps"));
  run.step_block_tokens = measurement(m, "step_block_tokens").get<int64_t>();
  const std::string gap = measurement(m, "step_gap").get<std::string>();
  const std::optional<StepGapKind> kind = step_gap_kind(gap);
  if (!kind)
    throw std::invalid_argument("calibration refit: measurements.step_gap: idle or light, got " + gap);
  run.step_gap = {*kind, measurement(m, "step_gap_s").get<double>()};
  if (m.contains("throttle")) {
    run.throttle_seconds = m["throttle"].at("seconds").get<std::vector<double>>();
    run.throttle_chunk_tokens = m["throttle"].at("chunk_tokens").get<int64_t>();
  }
  if (m.contains("throttle_attention")) {
    const json& a = m["throttle_attention"];
    run.attention_throttle_seconds = a.at("seconds").get<std::vector<double>>();
    run.attention_throttle_step = {.prefill_sequences = 1,
                                   .new_tokens = a.at("new_tokens").get<int64_t>(),
                                   .cached_tokens = a.at("cached_tokens").get<int64_t>(),
                                   .decode_sequences = a.at("decode_sequences").get<int64_t>(),
                                   .decode_context = a.at("decode_context").get<int64_t>()};
  }
  if (calibration.serving && calibration.serving->costs.attention) {
    AttentionCosts tiling = *calibration.serving->costs.attention;
    tiling.unsplit = {.key_tile = tiling.unsplit.key_tile, .slots = tiling.unsplit.slots};
    tiling.split = {.key_tile = tiling.split.key_tile, .slots = tiling.split.slots};
    run.attention_tiling = tiling;
  }
  return run;
}

}  // namespace

Calibration refit_serving(Calibration calibration, const ModelCard& step_model,
                          const HardwareConfig& reference, const std::string& command) {
  if (!calibration.serving) throw std::invalid_argument("calibration refit: the file has no serving section");
  if (calibration.serving->model != step_model.name) {
    throw std::invalid_argument("calibration refit: the steps ran " + calibration.serving->model + ", not " +
                                step_model.name);
  }
  CalibrationRun run;
  try {
    run = stored_step_run(calibration, step_model, reference);
  } catch (const json::exception& e) {  // a key missing or of the wrong type: the message names it
    throw std::invalid_argument(std::string("calibration refit: measurements: ") + e.what());
  }
  for (const char* key : {"steps", "throttle", "throttle_attention"}) calibration.measurements.erase(key);
  calibration.serving.reset();
  add_serving(run, calibration);
  calibration.measurements["refit"] = command;
  return calibration;
}

std::string reference_card_for(const std::string& device) {
  // The H100 SXM only ("H100 80GB HBM3" as the driver names it): the PCIe and NVL cards have other peaks.
  static const std::pair<const char*, const char*> kCards[] = {{"H200", "h200"},
                                                               {"H100 80GB HBM3", "h100-sxm"},
                                                               {"H100 SXM", "h100-sxm"},
                                                               {"MI355X", "mi355x"},
                                                               {"MI300X", "mi300x"}};
  for (const auto& [gpu, card] : kCards) {
    if (device.find(gpu) != std::string::npos) return card;
  }
  throw std::invalid_argument(
      "no built-in hardware card for the device '" + device +
      "': give --hardware FILE with its peaks (configs/hardware/*.yaml shows the form)");
}

}  // namespace kvtier::hw
