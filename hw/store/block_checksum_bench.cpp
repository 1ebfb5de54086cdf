// The NVMe store's per-block checksum on one core (issue 17's target: >= 10 GB/s).
//
// BM_BlockChecksum: CRC-32C as the store computes it (the CPU's instruction where it has one);
// BM_Crc32cPortable: the table fallback a CPU without it gets. Arguments: block bytes, from a 16 KiB page
// to an 8 MiB merged I/O. The data stays in the last-level cache for the small sizes, as a block just
// read from disk does when its checksum runs on the I/O thread right after the read.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "hw/store/block_checksum.h"

namespace kvtier::hw {
namespace {

std::vector<std::byte> random_block(int64_t bytes) {
  std::mt19937_64 rng(5);
  std::vector<std::byte> block(static_cast<size_t>(bytes));
  for (std::byte& b : block) b = static_cast<std::byte>(rng());
  return block;
}

template <uint32_t (*Checksum)(std::span<const std::byte>)>
void run_checksum(benchmark::State& state) {
  const std::vector<std::byte> block = random_block(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(Checksum(block));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
  state.SetLabel(Checksum == block_checksum ? crc32c_implementation() : "table");
}

void BM_BlockChecksum(benchmark::State& state) { run_checksum<block_checksum>(state); }
void BM_Crc32cPortable(benchmark::State& state) { run_checksum<crc32c_portable>(state); }

BENCHMARK(BM_BlockChecksum)->Arg(16 << 10)->Arg(64 << 10)->Arg(1 << 20)->Arg(8 << 20);
BENCHMARK(BM_Crc32cPortable)->Arg(64 << 10)->Arg(1 << 20);

}  // namespace
}  // namespace kvtier::hw
