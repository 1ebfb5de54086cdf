#include "sim/engine/progress.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>

#include "sim/core/process_usage.h"

namespace kvtier {
namespace {

constexpr double kQuietFirstS = 2.0;  // a run shorter than this shows only its last line
constexpr double kRedrawEveryS = 0.5;

// 1234567 -> "1.23M", 45210 -> "45.2K", 812 -> "812".
std::string short_count(double n) {
  char text[32];
  if (n >= 1e6) {
    std::snprintf(text, sizeof text, "%.2fM", n / 1e6);
  } else if (n >= 1e4) {
    std::snprintf(text, sizeof text, "%.1fK", n / 1e3);
  } else {
    std::snprintf(text, sizeof text, "%.0f", n);
  }
  return text;
}

std::string seconds_text(double s) {
  char text[32];
  if (s >= 3600) {
    std::snprintf(text, sizeof text, "%dh%02dm", static_cast<int>(s / 3600), static_cast<int>(s / 60) % 60);
  } else if (s >= 60) {
    std::snprintf(text, sizeof text, "%dm%02ds", static_cast<int>(s / 60), static_cast<int>(s) % 60);
  } else {
    std::snprintf(text, sizeof text, "%.1fs", s);
  }
  return text;
}

}  // namespace

ProgressLine::ProgressLine(ProgressRow row, ProgressGoal goal, int stderr_fd)
    : row_(std::move(row)), goal_(goal), fd_(stderr_fd), start_(std::chrono::steady_clock::now()) {}

double ProgressLine::wall_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

std::string ProgressLine::running_text(const ProgressCount& c, double wall) const {
  std::string text = row_.name + ": " + seconds_text(c.simulated_s) + " simulated, " +
                     short_count(static_cast<double>(c.requests_done)) + " requests done, " +
                     short_count(static_cast<double>(c.events) / wall) + " events/s";
  // The share of the arrivals done so far: by simulated time when the window ends them, else by requests
  // when their number is known. Past it, how long the queue takes to drain is not known.
  double done = -1;
  if (std::isfinite(goal_.window_s) && goal_.window_s > 0) {
    done = c.simulated_s / goal_.window_s;
  } else if (goal_.requests && *goal_.requests > 0) {
    done = static_cast<double>(c.requests_done) / static_cast<double>(*goal_.requests);
  }
  if (done > 0 && done < 1) {
    text += ", about " + seconds_text(wall * (1 - done) / done) + " left";
  } else if (done >= 1) {
    text += ", arrivals over, draining";
  }
  return text;
}

std::string ProgressLine::finished_text(const ProgressCount& c, double wall, double peak_rss_bytes) const {
  return row_.name + ": done, " + seconds_text(c.simulated_s) + " simulated in " + seconds_text(wall) + ", " +
         short_count(static_cast<double>(c.requests_done)) + " requests issued, " +
         short_count(static_cast<double>(c.events) / wall) + " events/s, peak memory " +
         std::to_string(static_cast<int64_t>(std::round(peak_rss_bytes / (1 << 20)))) + " MiB";
}

void ProgressLine::maybe_draw(const ProgressCount& count) {
  const double wall = wall_s();
  if (wall < kQuietFirstS || wall - drawn_at_s_ < kRedrawEveryS) return;
  drawn_at_s_ = wall;
  draw(running_text(count, wall));
}

void ProgressLine::finish(const ProgressCount& count) {
  draw(finished_text(count, wall_s(), process_usage().peak_rss_bytes));
}

// Up to the row, rewrite it, and back down to where the cursor was, in one write.
void ProgressLine::draw(const std::string& text) const {
  const int up = row_.rows - row_.row;
  const std::string line =
      "\033[" + std::to_string(up) + "A\r\033[K" + text + "\033[" + std::to_string(up) + "B\r";
  ssize_t written = ::write(fd_, line.data(), line.size());
  (void)written;  // a progress line that cannot be written is not worth failing the run for
}

void reserve_progress_rows(std::ostream& err, const std::vector<std::string>& names) {
  for (const std::string& name : names) err << name << ": starting\n";
  err.flush();
}

}  // namespace kvtier
