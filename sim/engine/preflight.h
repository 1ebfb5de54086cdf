// Checks made in the parent process before any simulation is forked, so that a mistake is reported as a
// located ConfigError (exit 2) rather than as a crash inside a SimGrid actor, and a run that cannot finish
// is refused before it fills memory.
//
// Two kinds of check:
//  1. Traces. The workload's trace (an open-loop `--trace`, or a closed-loop `source: trace`) is read
//     through: every line, with the reader's located errors; an open-loop trace must be sorted by time
//     (the error names the file and line). A trace read from a pipe ("-") is held in memory here, so
//     that every child reads the same bytes from the memory it inherits (trace_input.h).
//  2. Resource bounds. Before anything large is built, the run's size is estimated from the scenario:
//     time-series samples (simulated time / sample_interval), requests (the trace's, the generator's
//     `requests`, or for a closed loop an upper bound from the window, the sessions and each turn's
//     pause plus its output tokens at the shortest engine step), engine steps (simulated time over the
//     shortest step on each of a cluster's replicas, at most one per token of work), the sessions held
//     in flight and the cache's blocks (every replica's). The events must stay under kMaxEvents. What the run
//     holds in memory (the sessions, the cache's blocks, each request's latencies up to
//     LatencyQuantiles::kExactLimit requests; samples, records and transfers are written as it goes) must fit
//     in a share of the memory available (MemAvailable in /proc/meminfo, split between runs that go at once).
//     allow_huge (--allow-huge) skips these bounds.
#pragma once

#include <cstdint>
#include <optional>

#include "sim/engine/scenario.h"

namespace kvtier {

// About an hour and a half of simulation at the engine's 200K events per second (docs/testing.md).
inline constexpr double kMaxEvents = 1e9;
// The share of the available memory that the runs going at once may use between them.
inline constexpr double kMemoryShare = 0.5;

struct PreflightOptions {
  std::optional<double> available_bytes;  // memory to plan with; unset: MemAvailable from /proc/meminfo
  int concurrent_runs = 1;                // simulations running at once, each with its own memory
  bool allow_huge = false;                // skip the resource bounds
};

// What a run is expected to need, as preflight estimated it (upper bounds where the text above says so).
struct RunEstimate {
  double simulated_s = 0;
  double samples = 0;
  double requests = 0;
  double steps = 0;
  double bytes = 0;
  double events() const { return steps + samples + 2 * requests; }
};

// Throws ConfigError naming the file, line (where the key has one) and key, and the limit.
RunEstimate preflight(const Scenario& scenario, const PreflightOptions& options);

// MemAvailable from /proc/meminfo in bytes; nullopt when it cannot be read.
std::optional<double> available_memory_bytes();

}  // namespace kvtier
