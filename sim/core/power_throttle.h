// A GPU's clock under its power limit, as the time of its steps shows it.
//
// A compute-bound step (its linear layers bound by FLOPs, not by reading the weights: a prefill chunk of a
// few hundred tokens or more) draws more than a GPU's power limit at its boost clock. The GPU lets that
// last a while, then lowers its clock: after `onset_s` of such work the rest of the work runs `slowdown`
// times slower, except its prefill attention when `attention_slowdown` is set: attention and the linear
// layers need not lose the same share of their speed to the lower clock. Memory-bound steps and idle time
// cool it down again, a second of either undoing a second of heat. GpuHeat follows that state across a
// run's steps: a run of back-to-back prefill chunks is throttled after the onset, a prefill between
// decode steps starts cool. kvtier-hw calibrate measures the onset and slowdown on a run of back-to-back
// prefills, and with --throttle-attention attention's own factor on a second run (hw/tools/step_probe.h);
// it prices steps at the boost clock, and the simulator slows them with GpuHeat.
#pragma once

#include <optional>

namespace kvtier {

struct PowerThrottle {
  double onset_s = 0;   // seconds of compute-bound work at the boost clock before the clock drops
  double slowdown = 1;  // how much slower compute-bound work runs after that
  // How much slower its prefill attention runs then; nullopt: as much as the rest.
  std::optional<double> attention_slowdown = std::nullopt;

  // The slowdown of throttled work of which `attention_share` (0 to 1) is prefill attention.
  double slowdown_of(double attention_share) const {
    return slowdown + (attention_slowdown.value_or(slowdown) - slowdown) * attention_share;
  }
};

class GpuHeat {
 public:
  explicit GpuHeat(PowerThrottle throttle) : throttle_(throttle) {}

  // Runs a step that takes `boost_s` at the boost clock, `attention_s` of it prefill attention; returns how
  // long it takes from the present heat.
  double run(double boost_s, bool compute_bound, double attention_s = 0);
  // Idles (or runs memory-bound work) for `seconds`.
  void rest(double seconds);
  // Seconds of compute-bound work behind the GPU, at most the onset.
  double heat() const { return heat_; }

 private:
  PowerThrottle throttle_;
  double heat_ = 0;
};

// The boost-clock time of a compute-bound step that took `seconds` from a cool start, `attention_share`
// of its boost-clock time prefill attention: run()'s inverse.
double unthrottled_seconds(const PowerThrottle& throttle, double seconds, double attention_share = 0);

}  // namespace kvtier
