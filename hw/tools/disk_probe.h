// Disk measurements for calibration and for the store's speed target: our own O_DIRECT timings by block
// size and queue depth, and `dd` with O_DIRECT on the same file system as the yardstick.
//
// measure_disk() writes and then reads a fresh preallocated file through the same DirectFile the NVMe
// store uses, `queue_depth` blocking I/Os in flight. time_raw_transfers() is the store's own yardstick:
// plain transfers on the store's file, at its queue depth and merged I/O size, through the same I/O path
// (io_uring or worker threads) but without checksums, slot allocation or an index. run_dd() runs the system's dd (coreutils) with
// oflag=direct / iflag=direct and reads its own report, so the comparison is against a tool everyone
// trusts rather than against our own loop.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hw/store/io_queue.h"

namespace kvtier::hw {

enum class DiskOp { kWrite, kRead };
const char* to_string(DiskOp op);

struct DiskSample {
  DiskOp op = DiskOp::kRead;
  uint64_t block_bytes = 0;
  int queue_depth = 1;
  uint64_t bytes = 0;
  double seconds = 0;
  double bytes_per_s() const { return static_cast<double>(bytes) / seconds; }
};

// One write pass and one read pass over `total_bytes` in `block_bytes` I/Os (a fresh file in `dir`).
// Throws StoreError when the file cannot be created or an I/O fails.
std::vector<DiskSample> measure_disk(const std::string& dir, uint64_t block_bytes, int queue_depth,
                                     uint64_t total_bytes);

// One batch of blocks through the NVMe store (put or get), timed on the wall clock and on the process's CPU
// clock (user + system, every thread: the store checksums on its I/O threads).
struct StoreSample {
  DiskOp op = DiskOp::kRead;
  uint64_t block_bytes = 0;
  uint64_t blocks = 0;
  double seconds = 0;
  double cpu_seconds = 0;
  uint64_t bytes() const { return block_bytes * blocks; }
  double bytes_per_s() const { return static_cast<double>(bytes()) / seconds; }
};

// The disk as the store uses it: an NvmeStore with its default options (CRC-32C, queue depth, I/O path) in
// a fresh file in `dir`, written once in full, then for each count in `batch_blocks` a put of that many
// blocks of `block_bytes` and a get of them back. Throws StoreError when the store cannot be made or an
// I/O fails.
std::vector<StoreSample> measure_store(const std::string& dir, uint64_t block_bytes,
                                       std::span<const uint64_t> batch_blocks);

// One pass over `buffer.size()` bytes of `file` from `offset`, in `io_bytes` I/Os (the last may be
// shorter) through `queue`, between the file and `buffer` (4 KiB-aligned). Throws StoreError.
DiskSample time_raw_transfers(BlockFile& file, DiskOp op, uint64_t offset, std::span<std::byte> buffer,
                              uint64_t io_bytes, IoQueue& queue);

// The size of the I/Os the NVMe store issues for a batch of `batch_bytes` in full pages of `page_bytes`
// lying side by side: as many whole pages as fit in `max_io_bytes` (at least one), at most the batch.
uint64_t store_io_bytes(uint64_t page_bytes, uint64_t max_io_bytes, uint64_t batch_bytes);

struct DdRun {
  std::string command;
  uint64_t bytes = 0;
  double seconds = 0;
  double bytes_per_s() const { return static_cast<double>(bytes) / seconds; }
};

// Runs `dd` writing then reading `count` blocks of `block_bytes` with O_DIRECT in `dir`; removes its
// file. Throws std::runtime_error with dd's own output when dd fails.
std::pair<DdRun, DdRun> run_dd(const std::string& dir, uint64_t block_bytes, uint64_t count);

// Bytes and seconds from dd's summary line ("268435456 bytes (268 MB, 256 MiB) copied, 0.21 s, 1.3 GB/s").
// Throws std::runtime_error when the text holds no such line.
DdRun parse_dd_report(std::string_view report);

}  // namespace kvtier::hw
