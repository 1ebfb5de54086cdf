// A sweep: one scenario run at many points of its key space, each point with every variant of the
// scenario and, for confidence intervals, several seeds (`kvtier sweep`, docs/sweep.md).
//
// A sweep file names the scenario (a path or a built-in name), an optional trace, fixed overrides (`set:`)
// and what varies: a `grid:` (every combination of its keys' values, the first key outermost) and/or a
// `zip:` (lists of one length, walked together, crossed with the grid after its keys), plus `seeds:` (a
// list, or N for 1..N). Keys are the `key.path` of --set. A point's values become overrides located at
// the sweep file's line, so plan_runs() names that line when a key is wrong.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/core/config.h"
#include "sim/engine/scenario.h"

namespace kvtier {

struct SweepAxis {
  std::string key;  // a scenario key path, as --set takes it
  std::vector<Override> values;
};

struct SweepFile {
  std::string scenario;  // path or built-in name
  std::string trace;     // "" for the scenario's own workload
  std::vector<Override> fixed;
  std::vector<SweepAxis> grid;
  std::vector<SweepAxis> zip;
  std::vector<uint64_t> seeds;  // empty: the scenario's own seed
};

// One point of the sweep with one seed: what a result file holds.
struct SweepPoint {
  size_t index = 0;  // point-major, seed-minor; --shard i/N runs the indices with index % N == i
  std::string id;    // "p03" or, with seeds, "p03-seed2": stable for one sweep, whatever the sharding
  std::vector<Override> values;  // one per swept key, in key order
  std::optional<uint64_t> seed;
};

// A scalar value given for `key` in a file (a sweep's grid or set:, a plan's choices): an Override located
// at the value, so that plan_runs() names the file's line. Throws ConfigError for a list or a mapping.
Override scalar_override(const std::string& key, const ConfigNode& value);

// `seeds:` as a sweep or plan file gives it: N (seeds 1 to N) or a list of distinct seeds.
std::vector<uint64_t> read_seed_list(const ConfigNode& node);

// Throws ConfigError located at the offending key: unknown keys, an empty grid or value list, zip lists of
// different lengths, a key swept twice or both swept and set, bad seeds, nothing that varies.
SweepFile read_sweep_file(const ConfigNode& root);

// The sweep of `kvtier simulate SCENARIO --sweep key=v1,v2 ...`: each --sweep is one grid key.
SweepFile sweep_from_arguments(const std::string& scenario, const std::string& trace,
                               const std::vector<std::string>& set_arguments,
                               const std::vector<std::string>& sweep_arguments);

// Swept keys in the order of a point's values: the grid's, then the zip's.
std::vector<std::string> swept_keys(const SweepFile& sweep);

std::vector<SweepPoint> expand_sweep(const SweepFile& sweep);

// The overrides one point's runs take: the fixed ones, the trace, the point's values, its seed.
std::vector<Override> point_overrides(const SweepFile& sweep, const SweepPoint& point);

// The sweep as canonical JSON text (no comments or layout of the file): a results folder records it, and
// a rerun or a merge is refused where it differs.
std::string canonical_text(const SweepFile& sweep);

}  // namespace kvtier
