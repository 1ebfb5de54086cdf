// A random quantity described in YAML: a bare number for a constant, or a mapping naming a distribution.
//
//   tool_output_tokens: {dist: lognormal, median: 1500, sigma: 1.2, min: 1, max: 60000}
//   tool_time_s: {dist: exponential, mean: 3}
//   agents_per_session: 4
//
// Kinds: constant (value), uniform (low, high), exponential (mean), lognormal (median, sigma: the
// standard deviation of the log), normal (mean, stddev). `min` and `max` clamp every draw. Draws use
// the standard library's distributions over std::mt19937_64, so a seed gives the same draws on every
// run of the same build (libstdc++ here and on the GPU machine).
#pragma once

#include <limits>
#include <random>

#include "sim/core/config.h"

namespace kvtier {

class Distribution {
 public:
  enum class Kind { kConstant, kUniform, kExponential, kLognormal, kNormal };

  static Distribution constant(double value) { return Distribution(Kind::kConstant, value, 0); }
  // Throws ConfigError located at `node` for an unknown kind, a missing or bad parameter, min > max.
  static Distribution parse(const ConfigNode& node);

  double sample(std::mt19937_64& rng) const;
  // A draw rounded to the nearest integer, at least `floor`.
  int64_t sample_count(std::mt19937_64& rng, int64_t floor) const;

  Kind kind() const { return kind_; }
  // The bounds of the draws after clamping (infimum and supremum): exponential and lognormal draws are
  // positive, normal ones unbounded, unless min and max say otherwise.
  double lowest() const;
  double highest() const;

 private:
  Distribution(Kind kind, double first, double second) : kind_(kind), first_(first), second_(second) {}

  Kind kind_;
  double first_;   // value, low, mean, median (lognormal: stored as log(median)) or mean
  double second_;  // high, sigma or stddev
  double min_ = -std::numeric_limits<double>::infinity();
  double max_ = std::numeric_limits<double>::infinity();
};

}  // namespace kvtier
