// `kvtier sweep SWEEP.yaml`: a scenario at every point of a grid or zip of its keys, with seeds, run in
// parallel, resumable, shardable across machines; `kvtier sweep merge` joins the shards' folders.
// docs/sweep.md describes the sweep file and the folder.
#include <filesystem>
#include <memory>

#include "sim/cli/commands.h"
#include "sim/cli/sweep_command.h"
#include "sim/core/config_files.h"

namespace kvtier {
namespace {

void add_run_options(CLI::App& command, SweepCommandOptions& options) {
  command.add_option("--jobs", options.jobs, "Simulations at once (default: one per core)")
      ->check(CLI::PositiveNumber);
  command.add_option("--metric", options.metric, "The sweep.csv column plotted and added to the table")
      ->capture_default_str();
  command.add_flag("--no-plots", options.no_plots, "Skip the matplotlib plot");
  add_format_option(command, options.format);
}

void add_sweep_command(CLI::App& app) {
  auto options = std::make_shared<SweepCommandOptions>();
  auto file = std::make_shared<std::string>();
  auto dirs = std::make_shared<std::vector<std::string>>();
  CLI::App* command = app.add_subcommand(
      "sweep", "Run a scenario over a grid of its keys and seeds, resumable and shardable (docs/sweep.md)");
  command->add_option("sweep_file", *file, "Sweep file or built-in name (configs/sweeps/)");
  command->add_option("--out", options->out,
                      "Results folder (default: <sweep> in the runs folder); a rerun into it skips the "
                      "points already done");
  command->add_option("--shard", options->shard, "Run only the points with index % N == i (i/N)");
  command->add_flag("--keep-runs", options->keep_runs, "Keep each point's requests, time-series and transfer CSVs");
  command->add_flag("--quiet", options->quiet, "No progress line");
  command->add_flag("--allow-huge", options->allow_huge,
                    "Run even when the estimated events or memory pass the bounds (docs/robustness.md)");
  add_run_options(*command, *options);

  CLI::App* merge = command->add_subcommand("merge", "Join the folders of a sweep's shards into one");
  merge->add_option("dirs", *dirs, "The shards' folders")->required();
  merge->add_option("--out", options->out, "The merged folder (must not exist, or be empty)")->required();
  add_run_options(*merge, *options);
  merge->callback([options, dirs] { merge_sweep_folders(*dirs, *options); });

  command->callback([command, merge, options, file] {
    if (merge->parsed()) return;
    if (file->empty()) throw CLI::RequiredError("sweep_file");
    ConfigNode root = load_config(*file, "configs/sweeps");
    run_sweep_command(read_sweep_file(root), std::filesystem::path(*file).stem().string(), *options);
  });
}

const CommandRegistration registration(55, add_sweep_command);

}  // namespace
}  // namespace kvtier
