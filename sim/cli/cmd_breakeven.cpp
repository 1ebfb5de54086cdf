// `kvtier breakeven`: the bandwidth at which loading a cached prefix beats recomputing it; with --compare,
// the crossover the cost model predicts held to a sweep kvtier-hw breakeven measured (validation case (e),
// validate/compare/breakeven_check.h).
#include <iostream>
#include <optional>

#include "sim/cli/commands.h"
#include "sim/cli/output.h"
#include "sim/core/breakeven.h"
#include "sim/core/calibration.h"
#include "sim/core/cli_help.h"
#include "sim/core/config_files.h"
#include "sim/core/token_count.h"
#include "validate/compare/breakeven_check.h"

namespace kvtier {
namespace {

struct BreakevenOptions {
  std::string model;
  std::string hardware;
  std::string calibration;
  std::string compare;
  double prefill_tokens_per_s = 0;
  std::vector<std::string> layouts{"bf16", "int4", "turboquant4"};
  std::vector<std::string> contexts{"1K", "4K", "16K", "32K", "64K", "128K"};
  int64_t new_tokens = 1024;
  OutputFormat format = OutputFormat::kTable;
};

// "18.4x load", "4 % recompute", "tie": who wins and by how much.
std::string verdict(double speedup) {
  std::string by = format_margin(speedup >= 1 ? speedup : 1 / speedup);
  if (by == "the same") return "tie";
  return by + (speedup >= 1 ? " load" : " recompute");
}

struct Analysis {
  ModelCard model;
  std::optional<HardwareConfig> hardware;
  std::optional<StepCosts> step_costs;
  std::vector<LoadPath> paths;
  std::vector<int64_t> contexts;
};

CostModel cost_for(const Analysis& a, const BreakevenOptions& options, double bytes_per_token) {
  if (options.prefill_tokens_per_s > 0) {
    return CostModel::fixed_prefill_rate(a.model, options.prefill_tokens_per_s, bytes_per_token);
  }
  return CostModel(a.model, *a.hardware, bytes_per_token, a.step_costs);
}

std::vector<BreakevenRow> analyse(const Analysis& a, const BreakevenOptions& options) {
  std::vector<BreakevenRow> rows;
  for (const std::string& spec : options.layouts) {
    KvLayout layout = resolve_kv_layout(a.model, spec);
    double bpt = static_cast<double>(layout.bytes_per_token());
    CostModel cost = cost_for(a, options, bpt);
    BreakevenRow row{layout.name, layout.bytes_per_token(), {}};
    for (int64_t context : a.contexts) {
      row.points.push_back(breakeven_at(cost, a.model.layers, bpt, context, options.new_tokens, a.paths));
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

nlohmann::json to_json(const Analysis& a, const BreakevenOptions& options,
                       const std::vector<BreakevenRow>& rows) {
  nlohmann::json out{
      {"model", a.model.name}, {"new_tokens", options.new_tokens}, {"layouts", nlohmann::json::array()}};
  if (a.hardware) out["hardware"] = a.hardware->name;
  for (const BreakevenRow& row : rows) {
    nlohmann::json points = nlohmann::json::array();
    for (const BreakevenPoint& p : row.points) {
      nlohmann::json paths = nlohmann::json::array();
      for (const PathVerdict& v : p.paths) {
        paths.push_back(
            {{"path", v.path}, {"load_seconds", v.load_seconds}, {"speedup_vs_recompute", v.speedup}});
      }
      points.push_back({{"prefix_tokens", p.prefix_tokens},
                        {"prefill_seconds", p.prefill_seconds},
                        {"prefill_tokens_per_s", p.prefill_tokens_per_s},
                        {"breakeven_bytes_per_s", p.breakeven_bandwidth},
                        {"breakeven_overlapped_bytes_per_s", p.breakeven_overlapped},
                        {"paths", paths}});
    }
    out["layouts"].push_back(
        {{"name", row.layout}, {"bytes_per_token", row.bytes_per_token}, {"points", points}});
  }
  return out;
}

void print_table(const Analysis& a, const BreakevenOptions& options, const std::vector<BreakevenRow>& rows) {
  std::cout << a.model.name;
  if (a.hardware)
    std::cout << " on " << a.hardware->name << ", " << a.hardware->gpu.count
              << (a.hardware->gpu.count == 1 ? " GPU" : " GPUs");
  std::cout << "; " << with_commas(options.new_tokens) << " new tokens per turn\n";
  for (const LoadPath& path : a.paths) {
    std::cout << "  " << path.name << ": " << format_bandwidth(path.bandwidth) << "\n";
  }
  for (const BreakevenRow& row : rows) {
    std::cout << "\n" << row.layout << ": " << with_commas(row.bytes_per_token) << " B/token\n";
    std::vector<std::string> headers{"prefix", "recompute", "prefill tok/s", "break-even", "overlapped"};
    for (const LoadPath& path : a.paths) headers.push_back(path.name);
    Table table(headers);
    for (const BreakevenPoint& p : row.points) {
      std::vector<std::string> cells{token_count(p.prefix_tokens), format_duration(p.prefill_seconds),
                                     with_commas(static_cast<long long>(p.prefill_tokens_per_s)),
                                     format_bandwidth(p.breakeven_bandwidth),
                                     format_bandwidth(p.breakeven_overlapped)};
      for (const PathVerdict& v : p.paths) cells.push_back(verdict(v.speedup));
      table.add_row(cells);
    }
    table.print(std::cout);
    const BreakevenPoint& headline = row.points[row.points.size() / 2];
    for (const PathVerdict& v : headline.paths) {
      std::string by = format_margin(v.speedup >= 1 ? v.speedup : 1 / v.speedup);
      std::cout << v.path << ": "
                << (by == "the same"
                        ? "load and recompute take the same time"
                        : (v.speedup >= 1 ? "load" : "recompute") + std::string(" wins by ") + by)
                << " at " << token_count(headline.prefix_tokens) << " tokens\n";
    }
  }
}

void run_breakeven(const BreakevenOptions& options) {
  Analysis a{parse_model_card(load_config(options.model, "models")), std::nullopt, std::nullopt, {}, {}};
  if (!options.hardware.empty()) {
    a.hardware = parse_hardware(load_config(options.hardware, "configs/hardware"));
    if (!options.calibration.empty()) {
      const Calibration calibration = load_calibration(options.calibration);
      overlay_calibration(calibration, *a.hardware);
      a.step_costs = serving_step_costs(calibration, a.model);
    }
    a.paths = load_paths(*a.hardware);
  }
  for (const std::string& c : options.contexts) a.contexts.push_back(parse_token_count("--context", c));
  std::vector<BreakevenRow> rows = analyse(a, options);
  if (options.format == OutputFormat::kJson) {
    std::cout << to_json(a, options, rows).dump(2) << "\n";
  } else {
    print_table(a, options, rows);
  }
}

std::string times_cells(const validation::BreakevenTimes& t) {
  return format_duration(t.hit_s) + " / " + format_duration(t.miss_s);
}

// "8K (load wins from there)", "none in range (recompute wins throughout)".
std::string crossover_words(const validation::SeriesCheck& s, const validation::Crossover& c) {
  return validation::crossover_text(s, c) + " (" + validation::winner_name(c.final_winner) +
         (c.index == 0 ? " wins throughout)" : " wins from there)");
}

void print_check(const validation::BreakevenCheck& check) {
  std::cout << "Break-even sweep " << check.source << ": " << check.model << " on " << check.device << ", "
            << with_commas(check.new_tokens) << " new tokens per turn\n"
            << "Predicted on " << check.hardware << ", one GPU"
            << (check.calibrated ? (check.step_costs ? ", calibrated (hardware and serving step costs)"
                                                     : ", calibrated (hardware; default step formula)")
                                 : ", uncalibrated")
            << "\n";
  for (const validation::SeriesCheck& s : check.series) {
    std::cout << "\n" << s.kv << " from " << medium_name(s.path) << ": crossover predicted "
              << crossover_words(s, s.predicted_crossover) << ", measured " << crossover_words(s, s.measured_crossover)
              << ": " << (s.agrees() ? "agrees" : "MISSED") << "\n";
    Table table({"prefix", "predicted load", "predicted hit / miss", "winner", "measured load", "measured hit / miss",
                 "winner"});
    for (size_t i = 0; i < s.prefix_tokens.size(); ++i) {
      const validation::BreakevenTimes& p = s.predicted[i];
      const validation::BreakevenTimes& m = s.measured[i];
      table.add_row({token_count(s.prefix_tokens[i]), format_duration(p.load_s), times_cells(p),
                     validation::winner_name(validation::winner_of(p)), format_duration(m.load_s), times_cells(m),
                     validation::winner_name(validation::winner_of(m))});
    }
    table.print(std::cout);
  }
  std::cout << "\n"
            << (check.passed() ? "passed: every measured crossover is within one tested length of the predicted one"
                               : "missed: a measured crossover is more than one tested length from the predicted one")
            << "\n";
}

// --compare: the cost model's prediction of every point of a measured sweep, and the crossovers checked.
void run_compare(const BreakevenOptions& options) {
  if (options.hardware.empty()) {
    throw ConfigError("breakeven --compare: give --hardware FILE, the machine the sweep was measured on");
  }
  const validation::MeasuredSweep measured = validation::load_measured_sweep(options.compare);
  validation::SweepPricing pricing{
      parse_model_card(load_config(options.model.empty() ? measured.model : options.model, "models")),
      parse_hardware(load_config(options.hardware, "configs/hardware")), std::nullopt};
  if (!options.calibration.empty()) pricing.calibration = load_calibration(options.calibration);
  validation::BreakevenCheck check = validation::check_breakeven(measured, [&](const std::string& kv, Medium path,
                                                                               int64_t prefix) {
    return validation::predict_breakeven(pricing, measured.hbm_kv, kv, path, prefix, measured.new_tokens);
  });
  check.hardware = pricing.hardware.name;
  check.calibrated = pricing.calibration.has_value();
  check.step_costs = check.calibrated && serving_step_costs(*pricing.calibration, pricing.model).has_value();
  if (options.format == OutputFormat::kJson) {
    std::cout << validation::to_json(check).dump(2) << "\n";
  } else {
    print_check(check);
  }
  if (!check.passed()) {
    std::cout.flush();
    throw std::runtime_error("breakeven --compare: a measured crossover is more than one tested length from the "
                             "predicted one");
  }
}

void add_breakeven_command(CLI::App& app) {
  auto options = std::make_shared<BreakevenOptions>();
  CLI::App* command =
      app.add_subcommand("breakeven", "Bandwidth at which loading a cached prefix beats recomputing it");
  auto* model = command->add_option("--model", options->model,
                                    "Model card file or built-in name (with --compare: the sweep's by default)");
  auto* hardware = command->add_option("--hardware", options->hardware, "Hardware file or built-in name");
  command
      ->add_option("--calibration", options->calibration,
                   "Overlay this calibration JSON (kvtier-hw calibrate) on --hardware, as kvtier simulate does")
      ->needs(hardware);
  command->add_option("--compare", options->compare,
                      "Hold the predicted crossovers to this kvtier-hw breakeven result (exit 1 when one misses)");
  auto* rate = command
                   ->add_option("--prefill-tokens-per-s", options->prefill_tokens_per_s,
                                "A flat prefill rate instead of the FLOP cost model")
                   ->check(CLI::PositiveNumber);
  command->add_option("--kv", options->layouts, "KV presets or precision-map files")
      ->delimiter(',')
      ->capture_default_str();
  command->add_option("--context", options->contexts, "Prefix lengths in tokens (4096, 32K, ...)")
      ->delimiter(',')
      ->capture_default_str();
  command->add_option("--new-tokens", options->new_tokens, "New (uncached) tokens in the turn")
      ->capture_default_str()
      ->transform(token_count_suffixes())
      ->check(CLI::PositiveNumber);
  add_format_option(*command, options->format);
  command->callback([options, model, hardware, rate] {
    if (!options->compare.empty()) return run_compare(*options);
    if (model->count() == 0) throw ConfigError("breakeven: give --model FILE (or --compare RESULT.json)");
    if (hardware->count() == 0 && rate->count() == 0) {
      throw ConfigError("breakeven: give --hardware FILE or --prefill-tokens-per-s N");
    }
    run_breakeven(*options);
  });
}

const CommandRegistration registration(20, add_breakeven_command);

}  // namespace
}  // namespace kvtier
