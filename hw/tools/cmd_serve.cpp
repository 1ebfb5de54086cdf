// kvtier-hw serve: a scenario served for real on the GPU (hw/serve/serving_loop.h), its results written in
// the simulator's schema so that `kvtier validate` compares the two. The scenario, --trace and --set are
// read and checked as `kvtier simulate` reads them; variants run one after another. The output folder
// follows the contract of sim/app/output_folder.h: nothing kvtier did not write is replaced.
#include <iostream>
#include <memory>

#include "hw/serve/serving_loop.h"
#include "hw/tools/hw_commands.h"
#include "hw/tools/tool_support.h"
#include "sim/app/output_folder.h"
#include "sim/core/checked_file.h"
#include "sim/core/config_files.h"

namespace kvtier::hw {
namespace {

struct ServeArguments {
  std::string scenario;
  std::string trace;
  std::vector<std::string> overrides;
  std::string out;
  bool force = false;
  ServeOptions options;
};

// One file of a variant's folder, written by `write` and closed (CheckedFile names the file on error).
template <typename Write>
void write_file(const std::string& path, Write write) {
  CheckedFile file(path);
  write(file);
  file.close();
}

void write_variant(const std::string& dir, const ServeRun& run) {
  create_checked_folder(dir);
  write_file(dir + "/requests.csv",
             [&](std::ostream& o) { write_requests_csv(o, run.records, run.tier_names); });
  write_file(dir + "/timeseries.csv",
             [&](std::ostream& o) { write_timeseries_csv(o, run.samples, run.link_names, run.tier_names); });
  write_file(dir + "/" + kTransfersFile, [&](std::ostream& o) { write_transfers_csv(o, run.transfers); });
  write_file(dir + "/" + kStepsFile, [&](std::ostream& o) { write_steps_csv(o, run.steps); });
}

// What `kvtier validate SCENARIO --hw DIR` needs to simulate the same run.
nlohmann::json run_json(const ServeArguments& a) {
  nlohmann::json sets = nlohmann::json::array();
  for (const std::string& s : a.overrides) sets.push_back(s);
  return {{"scenario", a.scenario},
          {"trace", a.trace.empty() ? nlohmann::json(nullptr) : nlohmann::json(a.trace)},
          {"set", sets}};
}

void print_line(const std::string& variant, const nlohmann::json& s) {
  std::cerr << "kvtier-hw serve: " << variant << ": " << s["requests_completed"] << " requests completed in "
            << s["elapsed_s"].get<double>() << " s, TTFT p50 " << s["ttft_s"]["p50"].get<double>() << " s, p95 "
            << s["ttft_s"]["p95"].get<double>() << " s\n";
}

void run_serve(const ServeArguments& a) {
  const ConfigNode root = load_config(a.scenario, "configs/scenarios");
  std::vector<Override> overrides;
  for (const std::string& text : a.overrides) overrides.push_back(parse_set_argument(text));
  if (!a.trace.empty()) overrides.push_back(trace_override(a.trace));
  const std::vector<ScenarioRun> runs = plan_runs(root, overrides);
  StagingFolder staging(check_output_target(a.out, a.force));
  nlohmann::json result = {{"scenario", runs[0].scenario.name},
                           {"command", command_line()},
                           {"run", run_json(a)},
                           {"variants", nlohmann::json::array()}};
  for (const ScenarioRun& r : runs) {
    const ServeRun run = serve_scenario(r.scenario, a.options);
    write_variant((staging.path() / r.name).string(), run);
    result["variants"].push_back({{"name", r.name}, {"summary", run.summary}});
    print_line(r.name, run.summary);
  }
  write_checked_file((staging.path() / "summary.json").string(), result.dump(2) + "\n");
  staging.commit();
}

}  // namespace

void add_serve_command(CLI::App& app) {
  auto a = std::make_shared<ServeArguments>();
  CLI::App* command =
      app.add_subcommand("serve", "Serve a scenario on the GPU with the simulator's scheduler, for kvtier validate");
  command->add_option("scenario", a->scenario, "Scenario file or built-in name")->required();
  command->add_option("--trace", a->trace, "Replay this trace file open-loop instead of the workload");
  command->add_option("--set", a->overrides, "Override a scenario key: key.path=value (repeatable)");
  command->add_option("--out", a->out, "Output folder (it must not exist yet or be empty)")->required();
  command->add_flag("--force", a->force, "Replace an existing --out folder, but only one kvtier wrote");
  command->add_option("--nvme-dir", a->options.nvme_directory,
                      "Folder of the NVMe tier's store file (created, and removed at the end)")
      ->capture_default_str();
  command->callback([a] { run_serve(*a); });
}

}  // namespace kvtier::hw
