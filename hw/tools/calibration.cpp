#include "calibration.h"

#include <algorithm>
#include <cstdio>

#include "link_fit.h"

namespace kvtier::hw {
namespace {

using nlohmann::json;

std::string printf_string(const char* format, double value, const char* unit) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, value, unit);
  return buffer;
}

std::vector<TransferTiming> copy_timings(const std::vector<CopySample>& copies, CopyDirection direction) {
  std::vector<TransferTiming> timings;
  for (const CopySample& c : copies) {
    if (c.direction == direction) timings.push_back({c.bytes, c.seconds});
  }
  return timings;
}

// The rate of the largest transfer in one direction: what the hardware file calls the link bandwidth.
double largest_transfer_rate(const std::vector<CopySample>& copies, CopyDirection direction) {
  const CopySample* best = nullptr;
  for (const CopySample& c : copies) {
    if (c.direction == direction && (best == nullptr || c.bytes > best->bytes)) best = &c;
  }
  return best == nullptr ? 0 : best->bytes_per_s;
}

void add_pcie(const CalibrationRun& run, json& hardware) {
  const auto h2d = copy_timings(run.copies, CopyDirection::kHostToDevice);
  const auto d2h = copy_timings(run.copies, CopyDirection::kDeviceToHost);
  if (h2d.size() < 2 || d2h.size() < 2) return;
  // One latency per direction: on the H200 small copies to the host took 1.7-2.0 us and to the device
  // 2.6-2.9 us, and their mean missed 16 KiB copies to the host by 32 %.
  hardware["pcie"] = {
      {"h2d_bandwidth", bandwidth_string(largest_transfer_rate(run.copies, CopyDirection::kHostToDevice))},
      {"d2h_bandwidth", bandwidth_string(largest_transfer_rate(run.copies, CopyDirection::kDeviceToHost))},
      {"h2d_latency", duration_string(fit_link(h2d).latency)},
      {"d2h_latency", duration_string(fit_link(d2h).latency)}};
}

void add_nvme(const CalibrationRun& run, json& hardware) {
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
  json nvme = {{"read_bandwidth", bandwidth_string(best_read)},
               {"write_bandwidth", bandwidth_string(best_write)}};
  if (single_reads.size() >= 2) nvme["latency"] = duration_string(fit_link(single_reads).latency);
  hardware["nvme"] = nvme;
}

void add_gpu(const CalibrationRun& run, json& hardware) {
  json gpu = json::object();
  double flops = 0, seconds = 0;
  for (const GemmSample& g : run.gemms) {
    flops += g.shape.flops();
    seconds += g.seconds;
  }
  if (seconds > 0 && run.reference.gpu.bf16_flops > 0)
    gpu["prefill_mfu"] = flops / seconds / run.reference.gpu.bf16_flops;
  const double device_copy = largest_transfer_rate(run.copies, CopyDirection::kDeviceToDevice);
  if (device_copy > 0 && run.reference.gpu.hbm_bandwidth > 0) {
    gpu["memory_bandwidth_efficiency"] = device_copy / run.reference.gpu.hbm_bandwidth;
  }
  if (!gpu.empty()) hardware["gpu"] = gpu;
}

}  // namespace

std::string bandwidth_string(double bytes_per_s) {
  if (bytes_per_s >= 1e12) return printf_string("%.3f%s", bytes_per_s / 1e12, "TB/s");
  if (bytes_per_s >= 1e9) return printf_string("%.2f%s", bytes_per_s / 1e9, "GB/s");
  return printf_string("%.1f%s", bytes_per_s / 1e6, "MB/s");
}

std::string duration_string(double seconds) {
  if (seconds >= 1e-3) return printf_string("%.3f%s", seconds * 1e3, "ms");
  return printf_string("%.2f%s", seconds * 1e6, "us");
}

json calibration_json(const CalibrationRun& run) {
  json hardware = json::object();
  add_gpu(run, hardware);
  add_pcie(run, hardware);
  add_nvme(run, hardware);

  json kernels = json::object();
  for (const KernelRate& k : run.kernels) kernels[k.name + "_bytes_per_s"] = k.bytes_per_s;

  json copies = json::array();
  for (const CopySample& c : run.copies) {
    copies.push_back({{"direction", to_string(c.direction)},
                      {"bytes", c.bytes},
                      {"seconds", c.seconds},
                      {"bytes_per_s", c.bytes_per_s}});
  }
  json disk = json::array();
  for (const DiskSample& d : run.disk) {
    disk.push_back({{"op", to_string(d.op)},
                    {"block_bytes", d.block_bytes},
                    {"queue_depth", d.queue_depth},
                    {"bytes", d.bytes},
                    {"seconds", d.seconds},
                    {"bytes_per_s", d.bytes_per_s()}});
  }
  json gemms = json::array();
  for (const GemmSample& g : run.gemms) {
    gemms.push_back({{"model", g.model},
                     {"name", g.shape.name},
                     {"m", g.shape.m},
                     {"n", g.shape.n},
                     {"k", g.shape.k},
                     {"seconds", g.seconds},
                     {"flops_per_s", g.flops_per_s()}});
  }
  return {{"tool", "kvtier-hw calibrate"},
          {"command", run.command},
          {"device", run.device},
          {"reference_hardware", run.reference.name},
          {"hardware", hardware},
          {"kernels", kernels},
          {"measurements", {{"copy", copies}, {"disk", disk}, {"gemm", gemms}}}};
}

}  // namespace kvtier::hw
