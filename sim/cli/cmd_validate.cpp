// `kvtier validate`: a simulation's output folder compared with a hardware run's of the same scenario and
// trace (validate/compare/comparison.h): a table or JSON of predicted against measured, the TTFT scatter
// and CDF plots on request, and exit status 1 when a target is missed (2 when the folders cannot be
// compared). The comparison starts from two folders; a form that simulates the scenario first, with the
// calibration overlaid, only has to produce the predicted folder and call validate_folders().
#include <filesystem>
#include <iostream>

#include "sim/core/checked_file.h"
#include "sim/cli/commands.h"
#include "validate/compare/comparison.h"
#include "sim/app/plot_runner.h"
#include "sim/cli/output.h"
#include "sim/core/units.h"

namespace kvtier {
namespace {

using validation::Check;
using validation::Comparison;
using validation::MetricComparison;
using validation::Percentiles;
using validation::VariantComparison;

constexpr const char* kPlots[] = {"ttft_scatter.png", "ttft_cdf.png"};

struct ValidateOptions {
  std::string predicted_dir;
  std::string measured_dir;
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
  for (const auto& h : v.hits)
    table.add_row({"hit tokens " + h.tier, with_commas(h.predicted), with_commas(h.measured), ""});
  for (const auto& l : v.links)
    table.add_row({"bytes " + l.link, format_bytes(l.predicted), format_bytes(l.measured), ""});
  for (const auto& p : v.transfers.value_or(std::vector<validation::PathTransfers>{})) {
    table.add_row({"transfer time " + p.path + " (" + std::to_string(p.paired) + " paired)",
                   format_duration(p.predicted_seconds), format_duration(p.measured_seconds),
                   unsigned_percent(p.median_abs_error)});
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

// Both forms of the command end here, once the predicted folder exists.
void validate_folders(const ValidateOptions& options) {
  validation::Targets targets = options.targets();
  Comparison comparison =
      validation::compare_runs(validation::read_run_folder(options.predicted_dir),
                               validation::read_run_folder(options.measured_dir), targets);
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

void add_target_option(CLI::App& command, const char* name, double& percent, const char* what) {
  command.add_option(name, percent, what)->capture_default_str()->check(CLI::NonNegativeNumber);
}

void add_validate_command(CLI::App& app) {
  auto options = std::make_shared<ValidateOptions>();
  CLI::App* command = app.add_subcommand(
      "validate",
      "Compare a simulation's output folder with a hardware run's; exit 1 when a target is missed");
  command->add_option("predicted", options->predicted_dir, "Output folder of kvtier simulate")->required();
  command->add_option("measured", options->measured_dir, "Output folder of the hardware run, same schema")
      ->required();
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
  command->callback([options] { validate_folders(*options); });
}

const CommandRegistration registration(60, add_validate_command);

}  // namespace
}  // namespace kvtier
