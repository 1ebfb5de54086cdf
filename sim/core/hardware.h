// A node's hardware, from configs/hardware/*.yaml: GPUs with their HBM and compute, host DRAM, PCIe
// per GPU and direction, NVMe drives, and a network link to a remote KV pool.
#pragma once

#include <string>

#include "sim/core/config.h"

namespace kvtier {

struct GpuSpec {
  std::string model;
  int count = 1;
  double hbm_capacity = 0;   // bytes per GPU
  double hbm_bandwidth = 0;  // bytes/s per GPU
  double bf16_flops = 0;     // dense FLOP/s per GPU
  double fp8_flops = 0;
  double prefill_mfu = 0.5;                  // achieved / peak FLOP/s during prefill
  double memory_bandwidth_efficiency = 0.8;  // achieved / peak HBM bandwidth during decode
  // Each direction, to another GPU of the node (NVLink, Infinity Fabric); 0 when unknown, and then copies
  // between GPUs go over PCIe.
  double peer_bandwidth = 0;
};

struct LinkSpec {
  double bandwidth = 0;  // bytes/s
  double latency = 0;    // seconds
};

// The NVMe store's I/O size: adjacent blocks merged into one I/O of up to 8 MiB (NvmeStoreOptions).
inline constexpr double kStoreIoBytes = 8.0 * (1 << 20);

struct NvmeSpec {
  int drives = 0;
  double capacity = 0;         // bytes per drive
  double read_bandwidth = 0;   // bytes/s per drive, sequential
  double write_bandwidth = 0;  // bytes/s per drive, sequential
  double read_iops = 0;        // I/Os per second per drive; 0: not a limit
  double write_iops = 0;
  double io_bytes = kStoreIoBytes;  // the size of the store's I/Os
  // CPU seconds the store spends per byte it reads or writes (its checksums), summed over its threads;
  // 0: not a limit. Measured by kvtier-hw calibrate.
  double store_read_cpu = 0;
  double store_write_cpu = 0;
  double latency = 0;
  bool gpudirect = false;  // GPUDirect Storage: NVMe straight to HBM, skipping the DRAM bounce

  // What the store gets from the node's drives, bytes/s: each drive at its sequential rate or its IOPS
  // times the I/O size, whichever is less, and at most what the store's threads can checksum (one thread
  // per drive, at least two, as NvmeStore runs them; GPUDirect paths carry no checksum).
  double node_read_bandwidth() const;
  double node_write_bandwidth() const;
};

struct HardwareConfig {
  std::string name;
  std::string source;  // where the numbers come from, optional
  GpuSpec gpu;
  double dram_capacity = 0;   // bytes per node
  double dram_bandwidth = 0;  // bytes/s per node
  LinkSpec pcie_h2d;          // per GPU
  LinkSpec pcie_d2h;          // per GPU
  NvmeSpec nvme;
  LinkSpec network;  // to a remote KV pool; bandwidth 0 when there is none

  // Dense FLOP/s per GPU for weights of this dtype (fp8 weights run fp8 GEMMs).
  double peak_flops(const std::string& weight_dtype) const;
};

HardwareConfig load_hardware(const std::string& path);
HardwareConfig parse_hardware(const ConfigNode& root);

}  // namespace kvtier
