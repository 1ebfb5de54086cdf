// A scenario: everything one serving simulation needs, read from a YAML file (configs/scenarios/).
//
// It names the model card, the hardware file (optionally overlaid with a `kvtier-hw calibrate` JSON, whose
// kernel rates per KV encoding also price each tier's conversions to and from HBM's layout),
// the instance (GPUs, batching limits, HBM reserved for activations), the cache tiers (tier 0 is HBM,
// sized from what the weights and activations leave), the workload, the SLOs and the seed. `variants`
// lists named sets of overrides (the same `key.path=value` form as --set) to run side by side; a file
// without variants is one run. docs/scenarios.md describes every key.
//
// Reading is strict, so that a typo or a value that would be ignored fails before anything runs: every
// key must be known, every number in range, variant names unique, and every override (--set, a
// variant's set:) must name a key that the scenario reads. plan_runs() is that whole check.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/cache/tier_spec.h"
#include "sim/cluster/router.h"
#include "sim/core/calibration.h"
#include "sim/core/config.h"
#include "sim/core/cost_file.h"
#include "sim/core/cost_model.h"
#include "sim/core/hardware.h"
#include "sim/core/model_card.h"
#include "sim/engine/metrics.h"
#include "sim/serving/scheduler.h"

namespace kvtier {

// `cluster:`: replicas of the instance, on as many nodes of the hardware file as they need, behind a
// router (sim/cluster/router.h). Each replica has the scenario's instance and cache tiers to itself; the
// replicas on one node share its DRAM and NVMe links.
inline constexpr int kMaxClusterInstances = 4096;

// `cluster.network`: how the nodes' NICs meet, for the traffic of a shared pool. One switch of full
// bisection (nodes_per_leaf 0), or leaves of `nodes_per_leaf` nodes under a spine, each leaf reaching the
// spine over an uplink each way.
struct ClusterNetwork {
  int nodes_per_leaf = 0;
  LinkSpec uplink;
};

// `cluster.disaggregation`: the first `prefill_instances` replicas prefill, the others decode, and each
// request's KV moves from one to the other: whole once its prefill ends, or layer by layer as it runs.
struct Disaggregation {
  int prefill_instances = 1;
  bool layerwise = false;
};

struct ClusterSpec {
  int instances = 1;
  int instances_per_node = 1;  // derived: the node's GPUs over the instance's
  RouterConfig router;
  // `cluster.pool`: a KV pool below every replica's tiers, shared by all, striped over every node's DRAM
  // and reached over the network; with it, the path of its hits to a replica's HBM and the GPUs' rate
  // converting its layout.
  std::optional<TierSpec> pool;
  // Where its bytes live: `pool.nodes` dedicated pool nodes (hosts of the hardware file without GPUs,
  // after the serving nodes), or with 0 the serving nodes; `pool.medium`, their DRAM or their NVMe.
  int pool_nodes = 0;
  Medium pool_medium = Medium::kDram;
  LoadPath pool_load_path;
  ConversionRates pool_conversion;
  ClusterNetwork network;
  std::optional<Disaggregation> disaggregation;

  int nodes() const { return (instances + instances_per_node - 1) / instances_per_node; }  // serving nodes
  int pool_holders() const { return pool_nodes > 0 ? pool_nodes : nodes(); }  // the nodes the pool spans
  int instances_on_a_node() const { return std::min(instances, instances_per_node); }  // the most on one
};

struct Scenario {
  std::string name;
  std::string description;
  ModelCard model;
  HardwareConfig hardware;
  std::string calibration;  // the calibration file overlaid on the hardware, if any
  std::optional<StepCosts> step_costs;  // the calibration's serving terms, when fitted for this model
  int gpus = 1;
  int64_t max_batch_tokens = 8192;
  int64_t max_running = 256;
  double hbm_utilisation = 0.9;
  double activation_reserve_bytes = 0;  // per GPU
  bool layerwise_overlap = false;
  bool recompute_when_faster = false;  // instance.load_policy: breakeven
  // instance.transfers: blocking: the engine runs no step while copies it started are in flight (a
  // connector that loads and saves KV on the serving thread, as kvtier-hw serve does); background: copies
  // overlap the steps.
  bool blocking_transfers = false;
  double kv_space_bytes = 0;  // derived: HBM for KV across the instance's GPUs
  std::vector<ConversionRates> tier_conversions;  // per tier, to and from HBM's layout; tier 0's unused
  int64_t block_tokens = kDefaultBlockTokens;
  std::vector<TierSpec> tiers;  // with their media and, on this instance, their load paths
  Slo slo;
  // Drives every random choice of the run, the workload generator's included (a workload file may not pin
  // its own seed inside a scenario).
  uint64_t seed = 1;
  std::optional<ClusterSpec> cluster;   // unset: one instance, no router
  std::optional<CostFile> cost;         // `cost:`, the prices and power the run is charged at
  int64_t session_tokens = 128 * 1024;  // the session size of summary.json's sessions_fit
  double sample_interval_s = 1;
  std::optional<ConfigNode> workload;  // read by the workload builder (workload.h)
  std::optional<ConfigNode> config;    // the whole scenario as read, to locate later checks (preflight.h)
  std::vector<std::string>
      warnings;  // located: what was accepted but deserves a word (an oversubscribed tier)
};

struct Variant {
  std::string name;
  std::vector<std::pair<std::string, std::string>> overrides;  // key path, YAML value
};

// A value put over the scenario file's: from the command line or from a variant's set:.
struct Override {
  std::string path;    // cache.tiers[1].capacity
  std::string value;   // YAML text
  std::string origin;  // where it was given, as errors name it: "--set k=v", "s.yaml:30:7: variants[1].set.k"
};

// One simulation to run: a variant of the scenario, parsed.
struct ScenarioRun {
  std::string name;  // the variant's name, or "run" for a scenario without variants
  Scenario scenario;
};

// Reads a scenario after overrides have been applied. Throws ConfigError before anything runs. A DRAM or
// NVMe tier larger than the node's DRAM or drives is an error unless `allow_oversubscribe: true`.
Scenario parse_scenario(const ConfigNode& root);
// The variants of a scenario file, or one unnamed variant when it lists none. Throws ConfigError for an
// empty list and for a name that is empty, repeated or unusable as a folder name.
std::vector<Variant> parse_variants(const ConfigNode& root);
// Splits "key.path=value" (the --set form).
std::pair<std::string, std::string> parse_override(const std::string& text);
// parse_override() with the origin "--set key.path=value".
Override parse_set_argument(const std::string& text);

// The override a --trace option stands for: the whole trace, open loop at its own pace (the scenario's
// closed-loop settings do not apply).
Override trace_override(const std::string& trace);

// Everything `kvtier simulate` checks before it runs anything: applies `overrides` in order to a copy of
// the scenario file `root`, then parses each variant (its set: applied last) with its workload
// (validate_workload), and requires that each key an override sets is read by some run (a variant's
// set: by its own run). Throws ConfigError located at the key, or at the override that gave the value.
std::vector<ScenarioRun> plan_runs(const ConfigNode& root, const std::vector<Override>& overrides);

// What both serving engines (the simulator and kvtier-hw serve) build from a scenario: the scheduler's
// configuration and the instance's cost model (all its GPUs, HBM's layout for the memory terms).
SchedulerConfig scheduler_config(const Scenario& scenario);
CostModel instance_cost_model(const Scenario& scenario);

}  // namespace kvtier
