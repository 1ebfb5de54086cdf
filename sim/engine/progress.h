// A long simulation's progress on a terminal (kvtier simulate): a line per run on stderr, rewritten in
// place about twice a second once the run has taken two seconds, with the simulated time, the requests
// done, the engine's events per second of wall time and an estimate of the time left; and, when the run
// ends, a last line with its wall time, events per second and peak memory.
//
// A command that runs N simulations side by side first prints N lines (reserve_progress_rows); the
// simulation of row i (from 0) redraws only its own line, moving the cursor up N - i lines and back down
// in the same write, so that runs in different processes do not tear each other's lines.
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace kvtier {

struct ProgressRow {
  std::string name;
  int row = 0;
  int rows = 1;
  // When the arrivals end, as estimated before the run (preflight.h: an open-loop trace's last arrival):
  // a trace may end long before the workload's window.
  double arrivals_end_s = std::numeric_limits<double>::infinity();
};

// What the run will do, when it is known, for the estimate of the time left.
struct ProgressGoal {
  std::optional<int64_t> requests;  // an open loop of a known number of requests, when no window cuts it
  double window_s = 0;              // the simulated time its arrivals span, when finite
};

// What the run has done so far.
struct ProgressCount {
  double simulated_s = 0;
  int64_t requests_done = 0;  // completed or rejected
  int64_t events = 0;         // engine events, counted as the summary counts them
};

class ProgressLine {
 public:
  ProgressLine(ProgressRow row, ProgressGoal goal, int stderr_fd = 2);
  // Cheap enough to call every engine iteration: it reads the wall clock once every 256 calls.
  template <typename Count>
  void update(const Count& count) {
    if (++calls_ % 256 == 0) maybe_draw(count());
  }
  void finish(const ProgressCount& count);

  // The text of a line (without cursor movement), for tests.
  std::string running_text(const ProgressCount& count, double wall_s) const;
  std::string finished_text(const ProgressCount& count, double wall_s, double peak_rss_bytes) const;

 private:
  void maybe_draw(const ProgressCount& count);
  void draw(const std::string& text) const;
  double wall_s() const;

  ProgressRow row_;
  ProgressGoal goal_;
  int fd_;
  std::chrono::steady_clock::time_point start_;
  double drawn_at_s_ = 0;
  uint64_t calls_ = 0;
};

// Prints a line per run ("<name>: starting") for the runs' ProgressLines to rewrite.
void reserve_progress_rows(std::ostream& err, const std::vector<std::string>& names);

}  // namespace kvtier
