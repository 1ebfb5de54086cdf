// A capacity plan (`kvtier plan`, docs/planning.md): the smallest size of one scenario key, from a menu
// ordered small to large, that meets latency and hit-rate targets, for each of a few alternatives; or, with
// objective most_size, the largest (the most sessions an instance serves within its targets, say).
//
//   scenario: nvme-seed-llama70b-h100        # a path or a built-in name
//   variant: int4-offload                    # optional: one of its variants (else its variants are ignored)
//   set: {instance.gpus: 8}                  # optional: fixed overrides, as --set
//   targets: {ttft_p95: 2s, tpot_p95: 100ms, hit_rate: 0.5}
//   choices: {bf16: {cache.tiers[1].kv: bf16}, int4: {cache.tiers[1].kv: int4}}   # optional
//   size: {key: cache.tiers[1].capacity, menu: [64GiB, 128GiB, 256GiB]}
//   objective: least_size                    # least_cost (the scenario needs a `cost:`), most_size
//   seeds: 3                                 # or a list: the confirmation runs' seeds
//
// Every value becomes an Override located at the plan file's line, so that plan_runs() names that line
// when a key is wrong.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/core/config.h"
#include "sim/engine/scenario.h"

namespace kvtier {

// One target: a figure of summary.json held to a limit.
struct PlanTarget {
  std::string name;       // as the plan file names it: ttft_p95
  std::string metric;     // the summary's dotted name: ttft_s.p95
  double limit = 0;       // seconds, or a fraction for the hit rate
  bool at_least = false;  // the hit rate must reach its limit; latencies must stay at or under theirs
  std::string text;       // the limit as given: "2s"
};

// The targets a plan file may give, in the order tables show them: ttft_p50, ttft_p95, ttft_p99, tpot_p50,
// tpot_p95, tpot_p99 (durations) and hit_rate (a fraction of the input tokens served from the cache).
const std::vector<std::string>& plan_target_names();

struct PlanChoice {
  std::string name;
  std::vector<Override> overrides;
};

enum class PlanObjective { kLeastSize, kLeastCost, kMostSize };

// How a plan's search runs over its menu, in words for its reasoning. least_size and least_cost look for the
// smallest size that meets the targets, a larger one never hurting; most_size for the largest, a smaller one
// never hurting, so its menu is searched from its largest entry down (PlanFile::menu is in that order).
struct PlanDirection {
  std::string best = "smallest";   // the size the search looks for
  std::string easier = "larger";   // the way that never hurts
  std::string harder = "smaller";  // the way the binding entry lies
};
PlanDirection plan_direction(PlanObjective objective);
const char* objective_name(PlanObjective objective);

struct PlanFile {
  std::string scenario;       // path or built-in name
  std::string variant;        // "" : the scenario's variants are ignored
  std::string variant_where;  // where the plan file names it, for errors
  std::vector<Override> fixed;
  std::vector<PlanTarget> targets;
  std::vector<PlanChoice> choices;  // one named "as-is" with no overrides when the file gives none
  std::string size_key;
  std::vector<Override>
      menu;  // the sizes in the search's order: small to large, large to small for most_size
  PlanObjective objective = PlanObjective::kLeastSize;
  std::string objective_where;  // where the plan file gives it ("" when it does not), for errors
  std::vector<uint64_t> seeds;  // confirmation seeds; empty: the scenario's own seed alone
};

// Throws ConfigError located at the offending key: unknown keys or targets, a target without its unit or
// out of range, a menu that is empty, repeats a value or is not ordered small to large (when its values
// are sizes or numbers), the size key also set by set: or a choice, a choice that is not a mapping, `seed`
// set together with seeds:.
PlanFile read_plan_file(const ConfigNode& root);

// The plan as canonical JSON (what --format json echoes): scenario, variant, set, targets, choices, size,
// objective, seeds.
nlohmann::json plan_json(const PlanFile& plan);

}  // namespace kvtier
