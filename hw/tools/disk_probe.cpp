#include "hw/tools/disk_probe.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>
#include <stdexcept>

#include "hw/store/block_file.h"
#include "hw/store/memory_region.h"
#include "hw/store/nvme_store.h"
#include "hw/store/parallel_for.h"
#include "sim/core/process_usage.h"

namespace kvtier::hw {
namespace {

std::string scratch_path(const std::string& dir, const char* name) {
  return (std::filesystem::path(dir) / ("kvtier-probe-" + std::to_string(::getpid()) + "-" + name)).string();
}

template <typename Fn>
double seconds_of(Fn fn) {
  const auto start = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Runs a shell command and returns what it wrote to stdout and stderr, or throws when it fails.
std::string run_command(const std::string& command) {
  std::FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) throw std::runtime_error("cannot run: " + command);
  std::string output;
  std::array<char, 4096> chunk{};
  while (const size_t n = std::fread(chunk.data(), 1, chunk.size(), pipe)) output.append(chunk.data(), n);
  if (::pclose(pipe) != 0) throw std::runtime_error(command + " failed:\n" + output);
  return output;
}

}  // namespace

const char* to_string(DiskOp op) {
  return op == DiskOp::kWrite ? "write" : "read";
}

std::vector<DiskSample> measure_disk(const std::string& dir, uint64_t block_bytes, int queue_depth,
                                     uint64_t total_bytes) {
  const uint64_t blocks = std::max<uint64_t>(1, total_bytes / block_bytes);
  DirectFile file(scratch_path(dir, "disk"), blocks * block_bytes, IoMode::kDirect);
  MemoryRegion data = allocate_host_region(blocks * block_bytes);
  std::mt19937_64 rng(3);
  auto* words = reinterpret_cast<uint64_t*>(data.data());
  for (uint64_t i = 0; i < data.bytes() / 8; ++i) words[i] = rng();

  auto pass = [&](DiskOp op) {
    const double seconds = seconds_of([&] {
      parallel_for(blocks, queue_depth, [&](size_t i) {
        const iovec buffer{data.data() + i * block_bytes, block_bytes};
        if (op == DiskOp::kWrite) {
          file.write_at(i * block_bytes, {&buffer, 1});
        } else {
          file.read_at(i * block_bytes, {&buffer, 1});
        }
      });
    });
    return DiskSample{op, block_bytes, queue_depth, blocks * block_bytes, seconds};
  };
  const DiskSample write = pass(DiskOp::kWrite);
  return {write, pass(DiskOp::kRead)};
}

std::vector<StoreSample> measure_store(const std::string& dir, uint64_t block_bytes,
                                       std::span<const uint64_t> batch_blocks) {
  const uint64_t most = *std::max_element(batch_blocks.begin(), batch_blocks.end());
  const uint64_t block_span = round_up_to_io(block_bytes);
  NvmeStoreOptions options{.block_bytes = block_bytes, .capacity_blocks = most};
  auto store = NvmeStore::create(scratch_path(dir, "store"), options);
  MemoryRegion data = allocate_host_region(most * block_span);
  std::mt19937_64 rng(5);
  auto* words = reinterpret_cast<uint64_t*>(data.data());
  for (uint64_t i = 0; i < data.bytes() / 8; ++i) words[i] = rng();

  auto batch = [&](uint64_t blocks, auto&& each) {
    for (uint64_t i = 0; i < blocks; ++i)
      each(i, std::span<std::byte>(data.data() + i * block_span, block_bytes));
  };
  auto put = [&](uint64_t blocks) {
    std::vector<BlockWrite> writes;
    batch(blocks, [&](uint64_t i, std::span<std::byte> bytes) { writes.push_back({i, bytes}); });
    store->put(writes);
  };
  auto get = [&](uint64_t blocks) {
    std::vector<BlockRead> reads;
    batch(blocks, [&](uint64_t i, std::span<std::byte> bytes) { reads.push_back({i, bytes}); });
    store->get(reads);
  };
  auto erase = [&](uint64_t blocks) {
    for (uint64_t i = 0; i < blocks; ++i) store->erase(i);
  };
  auto timed = [&](DiskOp op, uint64_t blocks, auto&& pass) {
    const double cpu = process_usage().cpu_s;
    const double seconds = seconds_of([&] { pass(blocks); });
    return StoreSample{op, block_bytes, blocks, seconds, process_usage().cpu_s - cpu};
  };
  // Every slot written once, untimed, so that no timed put pays for the preallocated extents' conversion.
  put(most);
  erase(most);
  std::vector<StoreSample> samples;
  for (uint64_t blocks : batch_blocks) {
    samples.push_back(timed(DiskOp::kWrite, blocks, put));
    samples.push_back(timed(DiskOp::kRead, blocks, get));
    erase(blocks);
  }
  return samples;
}

DiskSample time_raw_transfers(BlockFile& file, DiskOp op, uint64_t offset, std::span<std::byte> buffer,
                              uint64_t io_bytes, IoQueue& queue) {
  std::vector<iovec> chunks;
  for (uint64_t done = 0; done < buffer.size(); done += io_bytes) {
    chunks.push_back({buffer.data() + done, std::min<uint64_t>(io_bytes, buffer.size() - done)});
  }
  std::vector<IoRequest> requests;
  for (size_t i = 0; i < chunks.size(); ++i) requests.push_back({&file, offset + i * io_bytes, {&chunks[i], 1}});
  const auto nothing = [](size_t) {};
  const double seconds = seconds_of([&] {
    queue.run(op == DiskOp::kWrite ? IoDirection::kWrite : IoDirection::kRead, requests, nothing, nothing);
  });
  return DiskSample{op, io_bytes, queue.queue_depth(), buffer.size(), seconds};
}

uint64_t store_io_bytes(uint64_t page_bytes, uint64_t max_io_bytes, uint64_t batch_bytes) {
  const uint64_t pages_per_io = std::max<uint64_t>(1, max_io_bytes / page_bytes);
  return std::min(pages_per_io * page_bytes, std::max(batch_bytes, page_bytes));
}

DdRun parse_dd_report(std::string_view report) {
  // The summary is the line holding " bytes " and "copied, ": "<bytes> bytes (...) copied, <seconds> s, ...".
  size_t line_start = 0;
  while (line_start < report.size()) {
    const size_t line_end = std::min(report.find('\n', line_start), report.size());
    const std::string line(report.substr(line_start, line_end - line_start));
    const size_t bytes_end = line.find(" bytes ");
    const size_t copied = line.find("copied, ");
    if (bytes_end != std::string::npos && copied != std::string::npos) {
      try {
        size_t seconds_end = 0;
        const double seconds = std::stod(line.substr(copied + 8), &seconds_end);
        if (line.compare(copied + 8 + seconds_end, 2, " s") == 0) {
          return DdRun{"", std::stoull(line.substr(0, bytes_end)), seconds};
        }
      } catch (const std::logic_error&) {
        // not a number where dd puts one: keep looking
      }
    }
    line_start = line_end + 1;
  }
  throw std::runtime_error("no dd summary line in: " + std::string(report));
}

std::pair<DdRun, DdRun> run_dd(const std::string& dir, uint64_t block_bytes, uint64_t count) {
  const std::string path = scratch_path(dir, "dd");
  const std::string sizes = " bs=" + std::to_string(block_bytes) + " count=" + std::to_string(count);
  const std::string write_command = "dd if=/dev/zero of=" + path + sizes + " oflag=direct";
  const std::string read_command = "dd if=" + path + " of=/dev/null" + sizes + " iflag=direct";
  try {
    DdRun write = parse_dd_report(run_command(write_command));
    write.command = write_command;
    DdRun read = parse_dd_report(run_command(read_command));
    read.command = read_command;
    std::filesystem::remove(path);
    return {write, read};
  } catch (...) {
    std::filesystem::remove(path);
    throw;
  }
}

}  // namespace kvtier::hw
