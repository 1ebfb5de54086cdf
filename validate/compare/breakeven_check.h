// Validation case (e): the break-even sweep kvtier-hw breakeven measured, held to the cost model's.
//
// For every measured point (a lower tier's KV layout, a path, a prefix of L tokens, s new tokens) the cost
// model predicts what `kvtier breakeven` prices:
//   miss = prefill(L + s) in one step
//   hit  = load(L) + prefill(s | L),  load = the path's latency + L × tier bytes per token / its bandwidth,
//          plus, when the tier's layout is not HBM's, the GPU's conversion of the loaded bytes at the rate
//          the simulator charges (the calibration's kernels, else 70 % of HBM bandwidth over bytes read +
//          written)
// on one GPU of the hardware file (the sweep runs on one), with a calibration's measured values and serving
// step costs laid over it as `kvtier simulate` lays a scenario's.
//
// Each (layout, path) series then has a crossover on each side: the first tested length from which the
// winner (load when hit < miss, else recompute) stays the one it is at the longest length; none in range
// when that winner wins at every length. The prediction holds when both sides end with the same winner and
// their crossovers are at most one tested length apart (both none: agreement).
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "sim/core/calibration.h"
#include "sim/core/hardware.h"
#include "sim/core/medium.h"
#include "sim/core/model_card.h"

namespace kvtier::validation {

struct BreakevenTimes {
  double load_s = 0;
  double hit_s = 0;
  double miss_s = 0;
};

// What kvtier-hw breakeven wrote (hw/tools/breakeven_probe.h describes the file).
struct MeasuredSweep {
  std::string source;  // the file, for messages
  std::string command, device, model;
  std::string hbm_kv;
  int64_t new_tokens = 0;
  struct Point {
    std::string kv;
    Medium path = Medium::kDram;
    int64_t prefix_tokens = 0;
    BreakevenTimes times;
  };
  std::vector<Point> points;
};

// Throws ConfigError: "name:line:column: ..." for invalid JSON, "name: key.path: expected ..." for a
// missing or mistyped key (points[3].miss_s).
MeasuredSweep parse_measured_sweep(const std::string& text, const std::string& name);
MeasuredSweep load_measured_sweep(const std::string& path);

// The cost model's side: the hardware file (its GPU count is set to one) with the calibration over it.
struct SweepPricing {
  ModelCard model;
  HardwareConfig hardware;
  std::optional<Calibration> calibration;
};
// Predicted times for `prefix_tokens` cached in `tier_kv` on `path` and `new_tokens` new ones, HBM holding
// `hbm_kv`. Throws ConfigError for a layout that does not resolve or a path the hardware lacks.
BreakevenTimes predict_breakeven(const SweepPricing& pricing, const std::string& hbm_kv,
                                 const std::string& tier_kv, Medium path, int64_t prefix_tokens,
                                 int64_t new_tokens);

enum class Winner { kLoad, kRecompute };
const char* winner_name(Winner winner);  // "load", "recompute"
inline Winner winner_of(const BreakevenTimes& t) {
  return t.hit_s < t.miss_s ? Winner::kLoad : Winner::kRecompute;
}

struct Crossover {
  size_t index =
      0;  // of the first length from which `final_winner` wins; 0: it wins throughout (none in range)
  Winner final_winner = Winner::kRecompute;
};
// REQUIRES: times not empty, ordered by prefix length.
Crossover crossover_of(const std::vector<BreakevenTimes>& times);

struct SeriesCheck {
  std::string kv;
  Medium path = Medium::kDram;
  std::vector<int64_t> prefix_tokens;  // increasing
  std::vector<BreakevenTimes> predicted, measured;
  Crossover predicted_crossover, measured_crossover;
  bool agrees() const;
};

struct BreakevenCheck {
  std::string source, model, device, hardware;
  int64_t new_tokens = 0;
  bool calibrated = false;          // a calibration was laid over the hardware
  bool step_costs = false;          // and priced steps with its serving terms
  std::vector<SeriesCheck> series;  // in the file's order of first appearance
  bool passed() const;
};

using BreakevenPredictor =
    std::function<BreakevenTimes(const std::string& tier_kv, Medium path, int64_t prefix)>;
// Groups the measured points into series, predicts each point and finds both crossovers. Throws ConfigError
// for a series measured twice at one length or with fewer than two lengths.
BreakevenCheck check_breakeven(const MeasuredSweep& measured, const BreakevenPredictor& predict);

// "32K" style for a length at the crossover, "none in range" for index 0.
std::string crossover_text(const SeriesCheck& series, const Crossover& crossover);
nlohmann::json to_json(const BreakevenCheck& check);

}  // namespace kvtier::validation
