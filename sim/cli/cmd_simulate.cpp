// `kvtier simulate`: the serving simulation of a scenario (or of each of its variants, side by side).
// Results go into a new folder by the contract of output_folder.h: nothing that was there is lost, and a
// failed or interrupted run (SIGINT, SIGTERM, SIGHUP) leaves neither a result nor a temporary folder nor
// a simulation process behind.
#include <unistd.h>

#include <filesystem>
#include <iostream>

#include "sim/app/plot_runner.h"
#include "sim/cli/commands.h"
#include "sim/cli/output.h"
#include "sim/cli/runs_folder.h"
#include "sim/cli/simulation_report.h"
#include "sim/cli/staged_output.h"
#include "sim/cli/sweep_command.h"
#include "sim/core/checked_file.h"
#include "sim/core/config_files.h"
#include "sim/engine/isolated_run.h"
#include "sim/engine/preflight.h"
#include "sim/engine/simulation.h"

namespace kvtier {
namespace {

constexpr const char* kDefaultScenario = "amd-seed-minimax-mi355x";
constexpr const char* kPlots[] = {"ttft_cdf.png", "ttft_parts.png", "hit_rate.png", "link_utilisation.png"};

struct SimulateOptions {
  std::string scenario = kDefaultScenario;
  std::string trace;
  std::vector<std::string> overrides;
  std::vector<std::string> sweeps;  // key=v1,v2,...: a sweep's grid (sweep_command.h) instead of one run
  std::string out;
  bool force = false;
  bool allow_huge = false;
  int jobs = 0;
  bool no_plots = false;
  bool no_transfers = false;
  bool quiet = false;
  OutputFormat format = OutputFormat::kTable;
};

struct PlannedRuns {
  std::vector<ScenarioRun> runs;
  std::vector<double> arrivals_end_s;  // per run, preflight's estimate: for the progress lines' time left
};

// Every variant is parsed, its --set keys checked and its trace read before anything runs, so a bad input
// fails at once (exit 2) and writes nothing.
PlannedRuns plan(const SimulateOptions& options, const ConfigNode& root) {
  std::vector<Override> overrides;
  for (const std::string& text : options.overrides) overrides.push_back(parse_set_argument(text));
  if (!options.trace.empty()) overrides.push_back(trace_override(options.trace));
  PlannedRuns planned{plan_runs(root, overrides), {}};
  PreflightOptions checks;
  checks.concurrent_runs = std::min(jobs_or_cores(options.jobs), static_cast<int>(planned.runs.size()));
  checks.allow_huge = options.allow_huge;
  for (const ScenarioRun& run : planned.runs) {
    planned.arrivals_end_s.push_back(preflight(run.scenario, checks).simulated_s);
    for (const std::string& warning : run.scenario.warnings)
      std::cerr << "kvtier: warning: " << warning << "\n";
  }
  return planned;
}

// On a terminal, unless --quiet, each run draws its progress on a line of its own (progress.h).
std::vector<nlohmann::json> run_all(const SimulateOptions& given, const PlannedRuns& planned,
                                    const std::string& dir) {
  const std::vector<ScenarioRun>& runs = planned.runs;
  const bool show_progress = !given.quiet && isatty(STDERR_FILENO);
  std::vector<Simulation> simulations;
  std::vector<std::string> names;
  for (const ScenarioRun& run : runs) {
    SimulationOptions options;
    options.out_dir = dir + "/" + run.name;
    options.transfers_csv = !given.no_transfers;
    if (show_progress) {
      const int row = static_cast<int>(names.size());
      options.progress =
          ProgressRow{run.name, row, static_cast<int>(runs.size()), planned.arrivals_end_s[row]};
    }
    names.push_back(run.name);
    simulations.push_back([&run, options] { return simulate(run.scenario, options); });
  }
  if (show_progress) {
    std::cerr << "kvtier: simulating " << runs.size() << (runs.size() == 1 ? " run" : " variants") << " ...\n";
    reserve_progress_rows(std::cerr, names);
  }
  return run_isolated(simulations, jobs_or_cores(given.jobs));
}

// The command as a user would type it again, for summary.json and the report.
std::string command_line(const SimulateOptions& o) {
  std::string line = "kvtier simulate " + o.scenario;
  if (!o.trace.empty()) line += " --trace " + o.trace;
  for (const std::string& s : o.overrides) line += " --set " + s;
  if (o.no_transfers) line += " --no-transfers";
  if (!o.out.empty()) line += " --out " + o.out;
  return line;
}

// The plot script's exit status is not the whole story: an interpreter that runs nothing exits 0.
void draw_plots(const std::string& dir, const std::vector<std::string>& names) {
  std::vector<std::string> args{dir};
  args.insert(args.end(), names.begin(), names.end());
  run_plot_script("sim/plots/simulation.py", args);
  for (const char* plot : kPlots) {
    std::filesystem::path path = std::filesystem::path(dir) / plot;
    std::error_code error;
    if (std::filesystem::file_size(path, error) == 0 || error) {
      throw ConfigError("sim/plots/simulation.py: the plot script exited without writing " + path.string() +
                        " (set KVTIER_PYTHON to a python3 with matplotlib, or pass --no-plots)");
    }
  }
}

// Simulates every run into `dir` and writes summary.json, the plots and report.md beside them; returns
// what summary.json holds.
nlohmann::json write_results(const SimulateOptions& options, const PlannedRuns& planned,
                             const std::string& dir, const std::string& command_line) {
  const std::vector<ScenarioRun>& runs = planned.runs;
  std::vector<nlohmann::json> summaries = run_all(options, planned, dir);
  std::vector<std::string> names;
  for (const ScenarioRun& r : runs) names.push_back(r.name);
  nlohmann::json result = {
      {"scenario", runs[0].scenario.name}, {"command", command_line}, {"variants", nlohmann::json::array()}};
  for (size_t i = 0; i < runs.size(); ++i)
    result["variants"].push_back({{"name", names[i]}, {"summary", summaries[i]}});
  write_checked_file(dir + "/summary.json", result.dump(2) + "\n");
  if (!options.no_plots) draw_plots(dir, names);
  write_checked_file(dir + "/report.md", markdown_report(result, !options.no_plots));
  return result;
}

// Writes everything into a temporary folder and moves it into place; errors name the final paths.
nlohmann::json write_into(const OutputTarget& target, const SimulateOptions& options,
                          const PlannedRuns& planned, const std::string& command_line) {
  nlohmann::json result;
  write_staged(target, [&](const std::filesystem::path& dir) {
    result = write_results(options, planned, dir.string(), command_line);
  });
  return result;
}

// "d/" and "d//" print as "d".
std::string without_trailing_slashes(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

void run_simulate(const SimulateOptions& options, const std::string& command_line) {
  ConfigNode root = load_config(options.scenario, "configs/scenarios");
  PlannedRuns planned = plan(options, root);
  std::string out = options.out;
  bool replace = options.force;
  if (out.empty()) {
    RunFolder folder = default_run_folder(options.scenario, options.trace, command_line);
    out = folder.path.string();
    replace = folder.replaces_earlier;
  }
  OutputTarget target = check_output_target(out, replace);
  nlohmann::json result;
  TerminationSignals signals;
  try {
    result = write_into(target, options, planned, command_line);
  } catch (...) {
    // The temporary folder is gone by now; end as the signal asked, not with the error it caused.
    if (int signal = TerminationSignals::caught()) TerminationSignals::reraise(signal);
    throw;
  }
  result["out_dir"] = without_trailing_slashes(out);
  if (options.format == OutputFormat::kJson) {
    std::cout << result.dump(2) << "\n";
  } else {
    print_simulation_table(std::cout, result);
  }
}

// --sweep makes the run a sweep (docs/sweep.md), into the folder a `kvtier sweep` of the same grid would use.
void run_sweep_of(const SimulateOptions& options) {
  SweepCommandOptions sweep;
  sweep.out = options.out;
  sweep.jobs = options.jobs;
  sweep.no_plots = options.no_plots;
  sweep.allow_huge = options.allow_huge;
  sweep.format = options.format;
  std::string name = std::filesystem::path(options.scenario).stem().string() + "--sweep";
  run_sweep_command(sweep_from_arguments(options.scenario, options.trace, options.overrides, options.sweeps), name,
                    sweep);
}

void add_simulate_command(CLI::App& app) {
  auto options = std::make_shared<SimulateOptions>();
  CLI::App* command = app.add_subcommand(
      "simulate", "Simulate serving a workload with a tiered KV cache (default: the AMD seed's comparison)");
  command->add_option("scenario", options->scenario, "Scenario file or built-in name")->capture_default_str();
  command->add_option("--trace", options->trace,
                      "Replay this trace file open-loop instead of the workload (- reads standard input)");
  command->add_option("--set", options->overrides, "Override a scenario key: key.path=value (repeatable)");
  CLI::Option* sweep = command->add_option(
      "--sweep", options->sweeps,
      "Run a sweep over a key's values: key.path=v1,v2,... (repeatable: a grid; docs/sweep.md)");
  command->add_option(
      "--out", options->out,
      "Output folder (default: <scenario>[--<trace>] in $KVTIER_RUNS_DIR, $XDG_DATA_HOME/kvtier/runs or "
      "~/.local/share/kvtier/runs, "
      "never over another command's results). "
      "It must not exist yet or be empty; an existing file, the current folder and the "
      "folders containing it are refused");
  command->add_flag("--force", options->force,
                    "Replace an existing --out folder, but only one kvtier wrote (it holds a .kvtier-output "
                    "file); anything else is refused");
  command->add_option("--jobs", options->jobs, "Variants simulated at once (default: one per core)")
      ->check(CLI::PositiveNumber);
  command->add_flag("--allow-huge", options->allow_huge,
                    "Run even when the estimated events or memory pass the bounds (docs/robustness.md)");
  command->add_flag("--no-plots", options->no_plots, "Skip the matplotlib plots");
  command
      ->add_flag(
          "--no-transfers", options->no_transfers,
          "Skip each variant's transfers.csv (a row per load and per stored block: gigabytes on a long "
          "run; kvtier validate then compares no transfer times)")
      ->excludes(sweep);  // a sweep's points write no CSVs unless kvtier sweep --keep-runs
  command->add_flag("--quiet", options->quiet,
                    "No progress lines on stderr (they are drawn only when stderr is a terminal)");
  command->add_flag_callback(
      "--allow-oversubscribe", [options] { options->overrides.emplace_back("allow_oversubscribe=true"); },
      "Simulate DRAM and NVMe tiers larger than the node has (a warning instead of an error); the same as "
      "--set allow_oversubscribe=true");
  add_format_option(*command, options->format);
  command->callback([options] {
    if (!options->sweeps.empty()) return run_sweep_of(*options);
    run_simulate(*options, command_line(*options));
  });
}

const CommandRegistration registration(50, add_simulate_command);

}  // namespace
}  // namespace kvtier
