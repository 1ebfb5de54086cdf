#include "sim/core/hardware.h"

#include <algorithm>
#include <limits>

namespace kvtier {
namespace {

// GPUs and drives per node: far above any machine, and within int.
constexpr int64_t kMaxDevices = int64_t{1} << 16;

double positive(const ConfigNode& node, std::string_view key, UnitKind kind) {
  double value = node.quantity(key, kind);
  if (value <= 0) node.child(key).fail("expected a positive value");
  return value;
}

double fraction(const ConfigNode& node, std::string_view key, double fallback) {
  double value = node.number(key, fallback);
  if (value <= 0 || value > 1) node.child(key).fail("expected a fraction in (0, 1]");
  return value;
}

double non_negative(const ConfigNode& node, std::string_view key) {
  double value = node.number(key, 0);
  if (value < 0) node.child(key).fail("expected a number of 0 or more (0: no limit)");
  return value;
}

GpuSpec parse_gpu(const ConfigNode& node) {
  node.allow_keys({"model", "count", "hbm_capacity", "hbm_bandwidth", "bf16_dense", "fp8_dense",
                   "prefill_mfu", "memory_bandwidth_efficiency", "peer_bandwidth"});
  GpuSpec gpu;
  gpu.model = node.string("model");
  int64_t count = node.integer("count", 1);
  if (count <= 0) node.child("count").fail("expected at least one GPU");
  if (count > kMaxDevices)
    node.child("count").fail("expected at most " + std::to_string(kMaxDevices) + " GPUs");
  gpu.count = static_cast<int>(count);
  gpu.hbm_capacity = positive(node, "hbm_capacity", UnitKind::kBytes);
  gpu.hbm_bandwidth = positive(node, "hbm_bandwidth", UnitKind::kBandwidth);
  gpu.bf16_flops = positive(node, "bf16_dense", UnitKind::kFlopRate);
  gpu.fp8_flops = node.quantity("fp8_dense", UnitKind::kFlopRate, gpu.bf16_flops);
  gpu.prefill_mfu = fraction(node, "prefill_mfu", gpu.prefill_mfu);
  gpu.memory_bandwidth_efficiency =
      fraction(node, "memory_bandwidth_efficiency", gpu.memory_bandwidth_efficiency);
  gpu.peer_bandwidth = node.quantity("peer_bandwidth", UnitKind::kBandwidth, 0);
  if (gpu.peer_bandwidth < 0) node.child("peer_bandwidth").fail("expected a bandwidth of 0 or more");
  return gpu;
}

LinkSpec parse_link(const ConfigNode& node, std::string_view bandwidth_key) {
  return {positive(node, bandwidth_key, UnitKind::kBandwidth),
          node.quantity("latency", UnitKind::kDuration, 0)};
}

NvmeSpec parse_nvme(const ConfigNode& node) {
  node.allow_keys({"drives", "capacity", "read_bandwidth", "write_bandwidth", "read_iops", "write_iops",
                   "io_size", "store_read_cpu_per_gb", "store_write_cpu_per_gb", "latency", "gpudirect"});
  NvmeSpec nvme;
  int64_t drives = node.integer("drives", 1);
  if (drives < 0) node.child("drives").fail("expected a drive count of 0 or more");
  if (drives > kMaxDevices)
    node.child("drives").fail("expected at most " + std::to_string(kMaxDevices) + " drives");
  nvme.drives = static_cast<int>(drives);
  if (nvme.drives == 0) return nvme;
  nvme.capacity = positive(node, "capacity", UnitKind::kBytes);
  nvme.read_bandwidth = positive(node, "read_bandwidth", UnitKind::kBandwidth);
  nvme.write_bandwidth = positive(node, "write_bandwidth", UnitKind::kBandwidth);
  nvme.read_iops = non_negative(node, "read_iops");
  nvme.write_iops = non_negative(node, "write_iops");
  if (node.has("io_size")) nvme.io_bytes = positive(node, "io_size", UnitKind::kBytes);
  nvme.store_read_cpu = node.quantity("store_read_cpu_per_gb", UnitKind::kDuration, 0) / 1e9;
  nvme.store_write_cpu = node.quantity("store_write_cpu_per_gb", UnitKind::kDuration, 0) / 1e9;
  nvme.latency = node.quantity("latency", UnitKind::kDuration, 0);
  nvme.gpudirect = node.boolean("gpudirect", false);
  return nvme;
}

// The rate a drive sustains at `io_bytes` per I/O: its sequential bandwidth, or fewer bytes when its IOPS
// run out first.
double drive_rate(double bandwidth, double iops, double io_bytes) {
  return iops > 0 ? std::min(bandwidth, iops * io_bytes) : bandwidth;
}

// The store's checksum ceiling: its I/O threads (NvmeStore::ring_threads: one per drive, at least two)
// each checksumming at 1 / cpu_per_byte; none on GPUDirect paths, which carry no checksum.
double store_cpu_rate(const NvmeSpec& nvme, double cpu_per_byte) {
  if (cpu_per_byte <= 0 || nvme.gpudirect) return std::numeric_limits<double>::infinity();
  return std::max(2, nvme.drives) / cpu_per_byte;
}

}  // namespace

double NvmeSpec::node_read_bandwidth() const {
  return std::min(drives * drive_rate(read_bandwidth, read_iops, io_bytes),
                  store_cpu_rate(*this, store_read_cpu));
}

double NvmeSpec::node_write_bandwidth() const {
  return std::min(drives * drive_rate(write_bandwidth, write_iops, io_bytes),
                  store_cpu_rate(*this, store_write_cpu));
}

double HardwareConfig::peak_flops(const std::string& weight_dtype) const {
  return weight_dtype == "fp8" || weight_dtype == "fp4" || weight_dtype == "int4" ? gpu.fp8_flops
                                                                                  : gpu.bf16_flops;
}

HardwareConfig parse_hardware(const ConfigNode& root) {
  root.allow_keys({"name", "source", "gpu", "host", "pcie", "nvme", "network"});
  HardwareConfig hw;
  hw.name = root.string("name");
  hw.source = root.string("source", "");
  hw.gpu = parse_gpu(root.child("gpu"));

  ConfigNode host = root.child("host");
  host.allow_keys({"dram_capacity", "dram_bandwidth"});
  hw.dram_capacity = positive(host, "dram_capacity", UnitKind::kBytes);
  hw.dram_bandwidth = positive(host, "dram_bandwidth", UnitKind::kBandwidth);

  ConfigNode pcie = root.child("pcie");
  pcie.allow_keys({"h2d_bandwidth", "d2h_bandwidth", "latency", "h2d_latency", "d2h_latency"});
  hw.pcie_h2d = parse_link(pcie, "h2d_bandwidth");
  hw.pcie_d2h = parse_link(pcie, "d2h_bandwidth");
  // A direction's own latency, where given, overrides the shared one (calibrations measure both).
  hw.pcie_h2d.latency = pcie.quantity("h2d_latency", UnitKind::kDuration, hw.pcie_h2d.latency);
  hw.pcie_d2h.latency = pcie.quantity("d2h_latency", UnitKind::kDuration, hw.pcie_d2h.latency);

  if (auto nvme = root.optional_child("nvme")) hw.nvme = parse_nvme(*nvme);
  if (auto network = root.optional_child("network")) {
    network->allow_keys({"bandwidth", "latency"});
    hw.network = parse_link(*network, "bandwidth");
  }
  return hw;
}

HardwareConfig load_hardware(const std::string& path) {
  return parse_hardware(ConfigNode::load_file(path));
}

}  // namespace kvtier
