// `kvtier validate`: a simulation compared with a hardware run of the same scenario and trace
// (validate/compare/comparison.h): a table or JSON of predicted against measured, the TTFT scatter and CDF
// plots on request, and exit status 1 when a target is missed (2 when the runs cannot be compared).
//
// Two forms. `kvtier validate PREDICTED MEASURED` compares two output folders. `kvtier validate SCENARIO
// --hw DIR` first simulates SCENARIO as the hardware run in DIR was made (the trace and --set overrides its
// summary.json records under "run", then the command line's), with a calibration overlaid, into --sim-out
// or a temporary folder removed afterwards; then it compares that folder with DIR, as the first form does.
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <set>

#include "sim/app/plot_runner.h"
#include "sim/cli/commands.h"
#include "sim/cli/output.h"
#include "sim/cli/staged_output.h"
#include "sim/core/checked_file.h"
#include "sim/core/config_files.h"
#include "sim/core/temporary_folder.h"
#include "sim/core/units.h"
#include "sim/engine/isolated_run.h"
#include "sim/engine/preflight.h"
#include "sim/engine/simulation.h"
#include "sim/engine/workload.h"
#include "validate/compare/comparison.h"

namespace kvtier {
namespace {

using validation::Check;
using validation::Comparison;
using validation::MetricComparison;
using validation::Percentiles;
using validation::VariantComparison;

constexpr const char* kPlots[] = {"ttft_scatter.png", "ttft_cdf.png"};

struct ValidateOptions {
  std::string predicted_dir;  // with --hw: the scenario
  std::string measured_dir;   // unused with --hw
  std::string hw_dir;
  std::string trace;
  std::vector<std::string> overrides;
  std::string calibration;
  std::string sim_out;
  bool force = false;
  std::string plot_dir;
  OutputFormat format = OutputFormat::kTable;
  // Targets in percent, as users type them.
  double ttft_percentile_pct = 5, ttft_goal_pct = 3, ttft_request_pct = 10, completed_pct = 2,
         transfer_pct = 3;

  validation::Targets targets() const {
    return {ttft_percentile_pct / 100, ttft_goal_pct / 100, ttft_request_pct / 100, completed_pct / 100,
            transfer_pct / 100};
  }
};

std::string unsigned_percent(const std::optional<double>& fraction) {
  return fraction ? fixed("%.2f %%", 100 * *fraction) : "-";
}

std::string seconds_or_dash(const std::optional<Percentiles>& p, double Percentiles::*which) {
  return p ? format_duration((*p).*which) : "-";
}

void add_metric_rows(Table& table, const std::string& label, const MetricComparison& m) {
  const std::pair<const char*, double Percentiles::*> rows[] = {
      {" p50", &Percentiles::p50}, {" p95", &Percentiles::p95}, {" p99", &Percentiles::p99}};
  for (const auto& [suffix, which] : rows) {
    std::string error = m.error ? fixed("%+.2f %%", 100 * ((*m.error).*which)) : "-";
    table.add_row(
        {label + suffix, seconds_or_dash(m.predicted, which), seconds_or_dash(m.measured, which), error});
  }
  table.add_row({label + " per request, median |error|", "", std::to_string(m.paired) + " requests",
                 unsigned_percent(m.median_abs_error)});
}

Table variant_table(const VariantComparison& v) {
  Table table({"metric", "predicted", "measured", "error"});
  add_metric_rows(table, "TTFT", v.metrics[validation::kTtft]);
  add_metric_rows(table, "TPOT", v.metrics[validation::kTpot]);
  add_metric_rows(table, "end-to-end", v.metrics[validation::kE2e]);
  table.add_row({"requests completed in window", with_commas(v.predicted_completed),
                 with_commas(v.measured_completed), ""});
  if (v.cache_at_measured_arrivals)
    table.add_row({"hits, bytes and transfers below: predicted at the measured arrivals", "", "", ""});
  for (const auto& h : v.hits)
    table.add_row({"hit tokens " + h.tier, with_commas(h.predicted), with_commas(h.measured), ""});
  for (const auto& l : v.links)
    table.add_row({"bytes " + l.link, format_bytes(l.predicted), format_bytes(l.measured), ""});
  for (const auto& p : v.transfers.value_or(std::vector<validation::PathTransfers>{})) {
    table.add_row({"transfer time " + p.path + " (" + std::to_string(p.paired) + " paired by " +
                       (v.transfers_by_request ? "request" : "order") + ")",
                   format_duration(p.predicted_seconds), format_duration(p.measured_seconds),
                   unsigned_percent(p.median_abs_error)});
    table.add_row(
        {"transfer bytes " + p.path, format_bytes(p.predicted_bytes), format_bytes(p.measured_bytes), ""});
  }
  return table;
}

void print_table(std::ostream& out, const Comparison& c) {
  out << "predicted: " << c.predicted_dir << "\nmeasured:  " << c.measured_dir << "\n";
  for (const VariantComparison& v : c.variants) {
    out << "\nvariant " << v.name << "\n";
    variant_table(v).print(out);
    out << "\n";
    Table checks({"check", "verdict", "numbers"});
    for (const Check& check : v.checks)
      checks.add_row({check.name, verdict_name(check.verdict), check.detail});
    checks.print(out);
  }
  std::vector<std::string> missed = c.missed();
  out << "\n"
      << (missed.empty() ? "every target met" : std::to_string(missed.size()) + " target(s) missed") << "\n";
}

// Per-request data under DIR/<variant>/request_errors.csv, then the scatter and CDF drawn from it.
void draw_plots(const Comparison& c, const std::filesystem::path& dir, double band) {
  std::vector<std::string> args{dir.string(), fixed("%g", band)};
  for (const VariantComparison& v : c.variants) {
    create_checked_folder(dir / v.name);
    CheckedFile out(dir / v.name / "request_errors.csv");
    validation::write_request_errors_csv(out, v);
    out.close();
    args.push_back(v.name);
  }
  run_plot_script("sim/plots/validation.py", args);
  for (const char* plot : kPlots) {
    std::error_code error;
    if (std::filesystem::file_size(dir / plot, error) == 0 || error) {
      throw std::runtime_error("the plot script did not write " + (dir / plot).string());
    }
  }
}

// Both forms of the command end here, once the predicted folder exists. `predicted_label` names the
// prediction in the output; `cache_replay_dir`, where not empty, holds the prediction at the measured
// arrivals, which the hits, bytes and transfers are compared from.
void validate_folders(const ValidateOptions& options, const std::string& predicted_dir,
                      const std::string& predicted_label, const std::string& cache_replay_dir = "") {
  validation::Targets targets = options.targets();
  std::optional<validation::RunFolder> cache_replay;
  if (!cache_replay_dir.empty()) cache_replay = validation::read_run_folder(cache_replay_dir);
  Comparison comparison = validation::compare_runs(validation::read_run_folder(predicted_dir),
                                                   validation::read_run_folder(options.measured_dir), targets,
                                                   cache_replay ? &*cache_replay : nullptr);
  comparison.predicted_dir = predicted_label;
  if (!options.plot_dir.empty()) draw_plots(comparison, options.plot_dir, targets.ttft_percentile_error);
  if (options.format == OutputFormat::kJson) {
    std::cout << validation::to_json(comparison).dump(2) << "\n";
  } else {
    print_table(std::cout, comparison);
  }
  std::vector<std::string> missed = comparison.missed();
  if (!missed.empty()) {
    std::string names;
    for (const std::string& m : missed) names += (names.empty() ? "" : ", ") + m;
    std::cout.flush();
    throw std::runtime_error("the prediction missed " + std::to_string(missed.size()) +
                             " target(s): " + names);
  }
}

// The simulation the SCENARIO --hw form runs, planned and checked before anything runs.
struct SimulationPlan {
  std::vector<ScenarioRun> runs;
  nlohmann::json run;  // summary.json's "run": how to make the simulation again
  std::string command;
  // A closed loop: per variant, the turns as the hardware run issued them, replayed into
  // kCacheReplayFolder for the cache's checks (validation::compare_runs explains why).
  std::optional<std::vector<std::vector<RecordedTurn>>> measured_arrivals;
};

// Under the simulated folder: the closed loop replayed at the hardware run's arrivals.
constexpr const char* kCacheReplayFolder = "at-measured-arrivals";

// Each variant's turns as the hardware run in `hw_dir` issued them, in the plan's variant order.
std::vector<std::vector<RecordedTurn>> measured_arrivals(const std::vector<ScenarioRun>& runs,
                                                         const std::string& hw_dir) {
  const validation::RunFolder measured = validation::read_run_folder(hw_dir);
  std::vector<std::vector<RecordedTurn>> arrivals;
  for (const ScenarioRun& run : runs) {
    auto variant = std::find_if(measured.variants.begin(), measured.variants.end(),
                                [&](const validation::VariantRun& v) { return v.name == run.name; });
    if (variant == measured.variants.end()) {
      throw ConfigError((std::filesystem::path(hw_dir) / validation::kSummaryFile).string() +
                        ": no variant '" + run.name + "', which the scenario has");
    }
    std::vector<RecordedTurn>& turns = arrivals.emplace_back();
    for (const validation::RequestTimes& r : variant->requests) {
      if (r.session < 0) {
        throw ConfigError(variant->requests_file + ":" + std::to_string(r.line) +
                          ": a closed-loop run's request without a session");
      }
      turns.push_back({r.session, static_cast<int32_t>(r.turn), r.arrival_s});
    }
  }
  return arrivals;
}

// The command as a user would type it again, for the simulated folder's summary.json.
std::string command_line(const ValidateOptions& o) {
  std::string line = "kvtier validate " + o.predicted_dir + " --hw " + o.hw_dir;
  if (!o.trace.empty()) line += " --trace " + o.trace;
  for (const std::string& s : o.overrides) line += " --set " + s;
  if (!o.calibration.empty()) line += " --calibration " + o.calibration;
  if (!o.sim_out.empty()) line += " --sim-out " + o.sim_out;
  return line;
}

// The hardware run's overrides but those of a key the command line sets again (which would be refused as
// a value never used).
std::vector<std::string> recorded_sets_not_given(const std::vector<std::string>& recorded,
                                                 const std::vector<std::string>& given) {
  std::set<std::string> given_keys;
  for (const std::string& text : given) given_keys.insert(parse_override(text).first);
  std::vector<std::string> kept;
  for (const std::string& text : recorded) {
    if (!given_keys.contains(parse_override(text).first)) kept.push_back(text);
  }
  return kept;
}

// The hardware run's trace and overrides, then the command line's (which win), then the calibration.
SimulationPlan plan_simulation(const ValidateOptions& o) {
  validation::RunSpec spec = validation::read_run_spec(o.hw_dir);
  ConfigNode root = load_config(o.predicted_dir, "configs/scenarios");
  std::string name = root.string("name");
  if (name != spec.scenario_name) {
    throw ConfigError(o.predicted_dir + ": scenario '" + name + "', but " +
                      (std::filesystem::path(o.hw_dir) / validation::kSummaryFile).string() +
                      " is a run of scenario '" + spec.scenario_name + "' (kvtier-hw serve " + spec.scenario +
                      "); validate a hardware run against the scenario it ran");
  }
  std::vector<std::string> sets = recorded_sets_not_given(spec.set, o.overrides);
  sets.insert(sets.end(), o.overrides.begin(), o.overrides.end());
  std::optional<std::string> trace = o.trace.empty() ? spec.trace : std::optional<std::string>(o.trace);
  std::vector<Override> overrides;
  for (const std::string& text : sets) overrides.push_back(parse_set_argument(text));
  if (trace) overrides.push_back(trace_override(*trace));
  if (!o.calibration.empty()) {
    overrides.push_back(
        {"calibration", nlohmann::json(o.calibration).dump(), "--calibration " + o.calibration});
  }
  SimulationPlan plan;
  plan.runs = plan_runs(root, overrides);
  PreflightOptions checks;
  checks.concurrent_runs = std::min(jobs_or_cores(0), static_cast<int>(plan.runs.size()));
  for (const ScenarioRun& run : plan.runs) preflight(run.scenario, checks);
  for (const std::string& warning : plan.runs[0].scenario.warnings)
    std::cerr << "kvtier: warning: " << warning << "\n";
  const std::string& calibration = plan.runs[0].scenario.calibration;
  plan.run = {{"scenario", o.predicted_dir},
              {"trace", trace ? nlohmann::json(*trace) : nlohmann::json(nullptr)},
              {"set", sets},
              {"calibration", calibration.empty() ? nlohmann::json(nullptr) : nlohmann::json(calibration)}};
  plan.command = command_line(o);
  if (is_closed_loop(plan.runs[0].scenario)) plan.measured_arrivals = measured_arrivals(plan.runs, o.hw_dir);
  return plan;
}

// Simulates every variant into `dir` and writes summary.json beside them, in the schema of kvtier
// simulate's folder and of the hardware run's; with `arrivals`, each variant's closed loop at its turns'
// recorded arrivals.
void write_variants(const SimulationPlan& plan, const std::filesystem::path& dir,
                    const std::vector<std::vector<RecordedTurn>>* arrivals) {
  std::vector<Simulation> simulations;
  for (size_t i = 0; i < plan.runs.size(); ++i) {
    SimulationOptions options;
    options.out_dir = (dir / plan.runs[i].name).string();
    if (arrivals) options.recorded_arrivals = (*arrivals)[i];
    simulations.push_back([&run = plan.runs[i], options] { return simulate(run.scenario, options); });
  }
  std::vector<nlohmann::json> summaries = run_isolated(simulations, jobs_or_cores(0));
  nlohmann::json run = plan.run;
  if (arrivals) run["arrivals"] = "measured";
  nlohmann::json result = {{"command", plan.command},
                           {"scenario", plan.runs[0].scenario.name},
                           {"run", run},
                           {"variants", nlohmann::json::array()}};
  for (size_t i = 0; i < plan.runs.size(); ++i)
    result["variants"].push_back({{"name", plan.runs[i].name}, {"summary", summaries[i]}});
  write_checked_file(dir / validation::kSummaryFile, result.dump(2) + "\n");
}

// The prediction into `dir` and, for a closed loop, its replay at the measured arrivals into
// dir/kCacheReplayFolder.
void write_simulation(const SimulationPlan& plan, const std::filesystem::path& dir) {
  if (isatty(STDERR_FILENO)) std::cerr << "kvtier: simulating " << plan.runs.size() << " variant(s) ...\n";
  write_variants(plan, dir, nullptr);
  if (!plan.measured_arrivals) return;
  create_checked_folder(dir / kCacheReplayFolder);
  write_variants(plan, dir / kCacheReplayFolder, &*plan.measured_arrivals);
}

std::string cache_replay_dir(const SimulationPlan& plan, const std::filesystem::path& dir) {
  return plan.measured_arrivals ? (dir / kCacheReplayFolder).string() : "";
}

// --sim-out: written into a temporary folder beside it and moved into place (output_folder.h).
void write_kept_simulation(const SimulationPlan& plan, const ValidateOptions& o) {
  write_staged(check_output_target(o.sim_out, o.force),
               [&](const std::filesystem::path& dir) { write_simulation(plan, dir); });
}

void validate_scenario(const ValidateOptions& o) {
  if (!o.measured_dir.empty()) {
    throw ConfigError(
        "give either two folders (PREDICTED MEASURED) or a scenario with --hw DIR, not both: '" +
        o.measured_dir + "' is one argument too many");
  }
  SimulationPlan plan = plan_simulation(o);
  ValidateOptions measured = o;
  measured.measured_dir = o.hw_dir;
  TerminationSignals signals;
  try {
    if (!o.sim_out.empty()) {
      write_kept_simulation(plan, o);
      validate_folders(measured, o.sim_out, o.sim_out, cache_replay_dir(plan, o.sim_out));
    } else {
      TemporaryFolder folder("kvtier-validate");
      write_simulation(plan, folder.path());
      throw_if_interrupted();
      validate_folders(measured, folder.path().string(),
                       "simulation of " + o.predicted_dir + " (not kept; --sim-out DIR keeps it)",
                       cache_replay_dir(plan, folder.path()));
    }
  } catch (...) {
    // The temporary folder is gone by now; end as the signal asked, not with the error it caused.
    if (int signal = TerminationSignals::caught()) TerminationSignals::reraise(signal);
    throw;
  }
}

void run_validate(const ValidateOptions& o) {
  if (!o.hw_dir.empty()) return validate_scenario(o);
  if (o.measured_dir.empty()) {
    throw ConfigError("expected two folders (PREDICTED MEASURED), or a scenario with --hw DIR; got only '" +
                      o.predicted_dir + "'");
  }
  validate_folders(o, o.predicted_dir, o.predicted_dir);
}

void add_target_option(CLI::App& command, const char* name, double& percent, const char* what) {
  command.add_option(name, percent, what)->capture_default_str()->check(CLI::NonNegativeNumber);
}

void add_validate_command(CLI::App& app) {
  auto options = std::make_shared<ValidateOptions>();
  CLI::App* command = app.add_subcommand(
      "validate",
      "Compare a simulation with a hardware run (two output folders, or SCENARIO --hw DIR); exit 1 when a "
      "target is missed");
  command
      ->add_option("predicted", options->predicted_dir,
                   "Output folder of kvtier simulate; with --hw, the scenario file or built-in name")
      ->required();
  command->add_option("measured", options->measured_dir, "Output folder of the hardware run, same schema");
  CLI::Option* hw = command->add_option(
      "--hw", options->hw_dir,
      "Output folder of kvtier-hw serve: simulate the scenario as that run was made, then compare");
  command->add_option("--trace", options->trace, "With --hw: replay this trace instead of the run's")
      ->needs(hw);
  command
      ->add_option(
          "--set", options->overrides,
          "With --hw: override a scenario key after the run's overrides: key.path=value (repeatable)")
      ->needs(hw);
  command
      ->add_option("--calibration", options->calibration,
                   "With --hw: overlay this calibration JSON (default: the scenario's own)")
      ->needs(hw);
  CLI::Option* sim_out = command->add_option(
      "--sim-out", options->sim_out,
      "With --hw: keep the simulation's output folder here (default: a temporary folder, removed). It must "
      "not exist yet or be empty");
  sim_out->needs(hw);
  command
      ->add_flag("--force", options->force, "Replace an existing --sim-out folder, but only one kvtier wrote")
      ->needs(sim_out);
  command->add_option("--plot-dir", options->plot_dir,
                      "Write ttft_scatter.png, ttft_cdf.png and <variant>/request_errors.csv here");
  add_target_option(*command, "--ttft-percentile-pct", options->ttft_percentile_pct,
                    "Largest |error| of TTFT p50 and of p95, in percent");
  add_target_option(*command, "--ttft-goal-pct", options->ttft_goal_pct,
                    "TTFT p50 and p95 goal, in percent (reported, never fails)");
  add_target_option(*command, "--ttft-request-pct", options->ttft_request_pct,
                    "Largest median over requests of |TTFT error|, in percent");
  add_target_option(*command, "--completed-pct", options->completed_pct,
                    "Largest |error| of requests completed in the window, in percent");
  add_target_option(*command, "--transfer-pct", options->transfer_pct,
                    "Largest median |error| of transfer time on any path, in percent");
  add_format_option(*command, options->format);
  command->callback([options] { run_validate(*options); });
}

const CommandRegistration registration(60, add_validate_command);

}  // namespace
}  // namespace kvtier
