#include "sim/cli/sweep_command.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include "sim/app/output_folder.h"
#include "sim/app/plot_runner.h"
#include "sim/cli/runs_folder.h"
#include "sim/cli/staged_output.h"
#include "sim/core/checked_file.h"
#include "sim/core/config_files.h"
#include "sim/core/temporary_folder.h"
#include "sim/engine/isolated_run.h"
#include "sim/engine/sweep_run.h"
#include "sim/engine/sweep_table.h"

namespace kvtier {
namespace {

namespace fs = std::filesystem;

// The sweep a folder holds: its canonical text, swept keys and point ids. A rerun or a merge compares it
// byte for byte.
constexpr const char* kSpecFile = "sweep-spec.json";
// The table's figures besides --metric.
const std::vector<std::string> kTableMetrics = {"ttft_s.p95", "tpot_s.p95", "hit_rate_total", "goodput_requests"};

std::string spec_text(const SweepFile& sweep, const std::vector<PlannedPoint>& planned) {
  nlohmann::json ids = nlohmann::json::array();
  for (const PlannedPoint& p : planned) ids.push_back(p.point.id);
  nlohmann::json spec = {{"sweep", nlohmann::json::parse(canonical_text(sweep))},
                         {"keys", swept_keys(sweep)}, {"points", ids}};
  return spec.dump(2) + "\n";
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

struct Shard {
  size_t index = 0;
  size_t count = 1;
};

Shard parse_shard(const std::string& text) {
  if (text.empty()) return {};
  size_t slash = text.find('/');
  std::optional<uint64_t> i = parse_uint64(text.substr(0, slash));
  std::optional<uint64_t> n = slash == std::string::npos ? std::nullopt : parse_uint64(text.substr(slash + 1));
  if (!i || !n || *n == 0 || *i >= *n) {
    throw ConfigError("--shard '" + text + "': expected i/N with 0 <= i < N, such as 0/8");
  }
  return {static_cast<size_t>(*i), static_cast<size_t>(*n)};
}

// A file a SIGKILL left half-written (replace_checked_file's temporary) is not a result: it goes before
// anything runs.
void remove_temporary_files(const fs::path& dir) {
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::string name = entry.path().filename().string();
    if (name.starts_with(".") && name.ends_with(".tmp")) fs::remove(entry.path());
  }
}

// Creates the sweep's folder (by the output-folder contract: never in a folder kvtier did not write), or
// resumes the one that holds this very sweep.
void open_sweep_folder(const fs::path& out, const std::string& spec) {
  if (fs::is_regular_file(out / kSpecFile) && fs::is_regular_file(out / kOutputMarker)) {
    if (read_text(out / kSpecFile) != spec) {
      throw ConfigError(out.string() + ": holds the results of a different sweep (its " + kSpecFile +
                        " differs from this sweep's); give another --out, or remove the folder");
    }
  } else {
    write_staged(check_output_target(out.string(), false), [&](const fs::path& dir) {
      write_checked_file(dir / kSpecFile, spec);
      create_checked_folder(dir / "points");
    });
  }
  remove_temporary_files(out);
  remove_temporary_files(out / "points");
}

std::string duration_text(double seconds) {
  if (seconds < 90) return std::to_string(static_cast<long>(seconds + 0.5)) + " s";
  if (seconds < 90 * 60) return std::to_string(static_cast<long>(seconds / 60 + 0.5)) + " min";
  return fixed("%.1f", seconds / 3600) + " h";
}

// "12/100 points, 34 s, ETA 4 min": a bar redrawn in place on a terminal, a line every few seconds
// otherwise (a log file, a batch job's output).
class ProgressLine {
 public:
  ProgressLine(size_t already, size_t total, bool quiet)
      : already_(already), total_(total), quiet_(quiet), terminal_(isatty(STDERR_FILENO)) {}

  void update(size_t run) {
    if (quiet_) return;
    double elapsed = seconds_since(start_);
    bool last = already_ + run == total_;
    if (!terminal_ && run > 0 && !last && seconds_since(last_line_) < kLineInterval) return;
    last_line_ = std::chrono::steady_clock::now();
    std::string text = std::to_string(already_ + run) + "/" + std::to_string(total_) + " points, " +
                       duration_text(elapsed);
    if (run > 0 && !last) text += ", ETA " + duration_text(elapsed / run * (total_ - already_ - run));
    if (terminal_) {
      std::cerr << "\r" << bar(already_ + run) << " " << text << "\033[K" << (last ? "\n" : "") << std::flush;
    } else {
      std::cerr << "kvtier sweep: " << text << "\n";
    }
  }

 private:
  static constexpr double kLineInterval = 5;
  static double seconds_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  }
  std::string bar(size_t done) const {
    constexpr size_t kWidth = 30;
    size_t filled = total_ == 0 ? kWidth : done * kWidth / total_;
    return "[" + std::string(filled, '#') + std::string(kWidth - filled, '.') + "]";
  }

  size_t already_, total_;
  bool quiet_, terminal_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_line_ = start_;
};

// The points whose files are in the folder, in index order.
std::vector<nlohmann::json> finished_points(const fs::path& out, const nlohmann::json& ids) {
  std::vector<nlohmann::json> points;
  for (const nlohmann::json& id : ids) {
    fs::path file = point_file(out / "points", id.get<std::string>());
    if (fs::exists(file)) points.push_back(nlohmann::json::parse(read_text(file)));
  }
  return points;
}

void require_metric(const std::string& metric, const nlohmann::json& results) {
  std::vector<std::string> columns = results["columns"].get<std::vector<std::string>>();
  if (std::find(columns.begin(), columns.end(), metric) != columns.end()) return;
  std::string near = closest_match(metric, columns);
  throw ConfigError("--metric '" + metric + "': not a column of sweep.csv" +
                    (near.empty() ? std::string(" (sweep.csv's header lists them)") : " (did you mean '" + near + "'?)"));
}

void draw_plot(const fs::path& out, const std::string& metric) {
  run_plot_script("sim/plots/sweep.py", {(out / "sweep.json").string(), metric, (out / "sweep.png").string()});
}

void print_table(std::ostream& os, const nlohmann::json& results, const std::vector<std::string>& metrics) {
  std::vector<std::string> headers{"point"};
  for (const nlohmann::json& key : results["keys"]) headers.push_back(key);
  headers.insert(headers.end(), {"variant", "seeds"});
  headers.insert(headers.end(), metrics.begin(), metrics.end());
  Table table(headers);
  for (const SweepMeans& row : mean_over_seeds(results, metrics)) {
    std::vector<std::string> cells{row.point};
    cells.insert(cells.end(), row.values.begin(), row.values.end());
    cells.insert(cells.end(), {row.variant, std::to_string(row.seeds)});
    for (const std::optional<double>& mean : row.means) cells.push_back(mean ? fixed("%.4g", *mean) : "-");
    table.add_row(std::move(cells));
  }
  table.print(os);
}

// sweep.json, sweep.csv and the plot from the point files there, then the table of means.
void write_tables(const fs::path& out, const SweepCommandOptions& options) {
  nlohmann::json spec = nlohmann::json::parse(read_text(out / kSpecFile));
  nlohmann::json results = sweep_results(spec["sweep"], spec["keys"], finished_points(out, spec["points"]));
  if (!results["rows"].empty()) require_metric(options.metric, results);
  replace_checked_file(out / "sweep.json", results.dump(2) + "\n");
  replace_checked_file(out / "sweep.csv", sweep_csv(results));
  if (!options.no_plots && !results["rows"].empty()) draw_plot(out, options.metric);
  std::vector<std::string> metrics = kTableMetrics;
  if (std::find(metrics.begin(), metrics.end(), options.metric) == metrics.end()) metrics.push_back(options.metric);
  if (options.format == OutputFormat::kJson) {
    std::cout << nlohmann::json{{"out_dir", out.string()}, {"points", results["rows"].size()}}.dump(2) << "\n";
  } else {
    print_table(std::cout, results, metrics);
    std::cout << "\nresults: " << (out / "sweep.csv").string() << "\n";
  }
}

void run_points(const std::vector<const PlannedPoint*>& pending, size_t already, size_t total, const fs::path& out,
                const SweepCommandOptions& options) {
  ProgressLine progress(already, total, options.quiet);
  progress.update(0);
  SweepRunOptions run;
  run.points_dir = out / "points";
  run.jobs = jobs_or_cores(options.jobs);
  if (options.keep_runs) run.runs_dir = out / "runs";
  run.on_point_done = [&](size_t done) { progress.update(done); };
  TerminationSignals signals;
  try {
    run_sweep_points(pending, run);
  } catch (...) {
    // Each finished point is in its file; end as the signal asked.
    if (int signal = TerminationSignals::caught()) TerminationSignals::reraise(signal);
    throw;
  }
}

}  // namespace

void run_sweep_command(const SweepFile& sweep, const std::string& default_name, const SweepCommandOptions& options) {
  Shard shard = parse_shard(options.shard);
  ConfigNode scenario = load_config(sweep.scenario, "configs/scenarios");
  PreflightOptions checks;
  checks.concurrent_runs = jobs_or_cores(options.jobs);
  checks.allow_huge = options.allow_huge;
  std::vector<PlannedPoint> planned = plan_sweep(sweep, scenario, checks);
  fs::path out = options.out.empty() ? runs_folder() / default_name : fs::path(options.out);
  open_sweep_folder(out, spec_text(sweep, planned));
  std::vector<const PlannedPoint*> pending;
  size_t mine = 0;
  for (const PlannedPoint& p : planned) {
    if (p.point.index % shard.count != shard.index) continue;
    ++mine;
    if (!fs::exists(point_file(out / "points", p.point.id))) pending.push_back(&p);
  }
  run_points(pending, mine - pending.size(), mine, out, options);
  write_tables(out, options);
}

void merge_sweep_folders(const std::vector<std::string>& dirs, const SweepCommandOptions& options) {
  std::string spec = read_text(fs::path(dirs[0]) / kSpecFile);
  for (const std::string& dir : dirs) {
    if (!fs::is_regular_file(fs::path(dir) / kSpecFile)) {
      throw ConfigError(dir + ": not a sweep's folder (it has no " + kSpecFile + ")");
    }
    if (read_text(fs::path(dir) / kSpecFile) != spec) {
      throw ConfigError(dir + ": a shard of a different sweep than " + dirs[0] + " (their " + kSpecFile + " differ)");
    }
  }
  std::vector<std::pair<std::string, fs::path>> sources;  // point id, its file
  nlohmann::json ids = nlohmann::json::parse(spec)["points"];
  for (const nlohmann::json& id : ids) {
    std::vector<std::string> holders;
    for (const std::string& dir : dirs) {
      if (fs::exists(point_file(fs::path(dir) / "points", id))) holders.push_back(dir);
    }
    if (holders.empty()) throw ConfigError("point " + id.get<std::string>() + " is in none of the folders (a shard missing or unfinished?)");
    if (holders.size() > 1) throw ConfigError("point " + id.get<std::string>() + " is in both " + holders[0] + " and " + holders[1]);
    sources.emplace_back(id, point_file(fs::path(holders[0]) / "points", id));
  }
  fs::path out = options.out;
  write_staged(check_output_target(options.out, false), [&](const fs::path& dir) {
    write_checked_file(dir / kSpecFile, spec);
    create_checked_folder(dir / "points");
    for (const auto& [id, file] : sources) write_checked_file(point_file(dir / "points", id), read_text(file));
  });
  write_tables(out, options);
}

}  // namespace kvtier
