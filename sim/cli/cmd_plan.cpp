// `kvtier plan PLAN.yaml`: capacity planning. For each choice of a plan (such as the KV precision), the
// smallest size on a menu (such as the DRAM tier's capacity) that meets latency and hit-rate targets, found
// by bisection with one seed, confirmed with every seed, and shown failing one size smaller; printed with
// its reasoning. docs/planning.md describes the plan file and the output.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <memory>

#include "sim/cli/commands.h"
#include "sim/cli/output.h"
#include "sim/core/config_files.h"
#include "sim/core/units.h"
#include "sim/engine/isolated_run.h"
#include "sim/engine/metrics.h"
#include "sim/engine/plan_run.h"

namespace kvtier {
namespace {

struct PlanOptions {
  std::string file;
  int jobs = 0;
  bool quiet = false;
  bool allow_huge = false;
  OutputFormat format = OutputFormat::kTable;
};

std::string overrides_text(const std::vector<Override>& overrides) {
  std::string text;
  for (const Override& o : overrides) text += std::string(text.empty() ? "" : ", ") + o.path + "=" + o.value;
  return text;
}

std::string limit_text(const PlanTarget& t) {
  return t.name + (t.at_least ? " >= " : " <= ") + format_target_value(t, t.limit);
}

std::string price_text(const std::optional<double>& usd) {
  return usd ? fixed("%.2f", *usd) : "-";
}

// The parts of the mean TTFT (metrics.h's ttft_parts_s) with their means over the point's seeds, in the
// order they are taken.
std::vector<std::pair<std::string, double>> ttft_parts(const PlanPoint& p) {
  std::vector<std::pair<std::string, double>> parts;
  if (p.summaries.empty() || !p.summaries[0].contains("ttft_parts_s") ||
      !p.summaries[0]["ttft_parts_s"].is_object()) {
    return parts;
  }
  for (const std::string& name : ttft_part_names(p.summaries[0]["ttft_parts_s"]))
    parts.emplace_back(name, mean_figure(p, "ttft_parts_s." + name));
  return parts;
}

std::string part_duration(double seconds) {
  return seconds < 0.5e-3 ? "0 s" : format_duration(seconds);
}

// "mean TTFT 1.23 s: queue 0.80 s (65 %), load_dram 0.10 s (8 %), ...; mostly queueing"
std::string breakdown_text(const PlanPoint& p) {
  std::vector<std::pair<std::string, double>> parts = ttft_parts(p);
  if (parts.empty()) return "no TTFT parts in its summary";
  double total = 0, loads = 0;
  for (const auto& [name, value] : parts) {
    total += value;
    if (name.starts_with("load_")) loads += value;
  }
  std::string text = "mean TTFT " + format_duration(total) + " =";
  for (const auto& [name, value] : parts) {
    text += " " + name + " " + part_duration(value) + " (" +
            fixed("%.0f", total > 0 ? 100 * value / total : 0) + " %),";
  }
  text.pop_back();
  // The largest of queueing, loading (every tier together), conversion, prefill and the rest.
  std::string largest = "loading";
  double most = loads;
  for (const auto& [name, value] : parts) {
    if (name.starts_with("load_") || value <= most) continue;
    most = value;
    largest = name == "queue" ? "queueing" : name;
  }
  return text + "; mostly " + largest;
}

std::string target_cell(const PlanTarget& t, double mean, double worst, bool with_worst) {
  std::string text = format_target_value(t, mean);
  if (with_worst) text += " [" + format_target_value(t, worst) + "]";
  return text + (meets(t, mean) ? " ok" : " MISS");
}

// "misses ttft_p95 (2.91 s > 2.00 s), hit_rate (0.41 < 0.50)"
std::string misses_text(const std::vector<PlanTarget>& targets, const PlanPoint& p) {
  std::string text;
  for (size_t t = 0; t < targets.size(); ++t) {
    if (meets(targets[t], p.mean[t])) continue;
    text += std::string(text.empty() ? "" : ", ") + targets[t].name + " (" +
            miss_comparison(targets[t], p.mean[t]) + ")";
  }
  return text.empty() ? "meets every target" : "misses " + text;
}

void print_header(std::ostream& os, const std::string& file, const PreparedPlan& prepared, int jobs) {
  const PlanFile& plan = prepared.plan;
  os << "Plan " << file << ": scenario " << plan.scenario << " (" << prepared.scenario_name << ")"
     << (plan.variant.empty() ? "" : ", variant " + plan.variant) << "\n";
  if (!plan.fixed.empty()) os << "  set: " << overrides_text(plan.fixed) << "\n";
  std::string targets, menu;
  for (const PlanTarget& t : plan.targets)
    targets += std::string(targets.empty() ? "" : ", ") + limit_text(t);
  for (const Override& m : plan.menu) menu += std::string(menu.empty() ? "" : ", ") + m.value;
  os << "  question: the " << plan_direction(plan.objective).best << " " << plan.size_key << " of [" << menu
     << "] with " << targets << "\n";
  for (const PlanChoice& c : plan.choices) {
    os << "  choice " << c.name << ": "
       << (c.overrides.empty() ? "the scenario as it is" : overrides_text(c.overrides)) << "\n";
  }
  os << "  objective " << objective_name(plan.objective) << ", seeds " << seed_list_text(prepared.seeds)
     << ", " << jobs << " simulations at once\n\n";
}

void print_result(std::ostream& os, const PreparedPlan& prepared, const PlanSearchResult& result,
                  double wall_s, int jobs) {
  const PlanFile& plan = prepared.plan;
  const bool seeds = prepared.seeds.size() > 1;
  const bool priced = plan.objective == PlanObjective::kLeastCost ||
                      (!prepared.usd_per_hour.empty() && prepared.usd_per_hour[0][0].has_value());

  os << "\nAnswer per choice (each target's mean over seeds " << seed_list_text(prepared.seeds)
     << (seeds ? ", the worst seed in brackets" : "") << "):\n";
  std::vector<std::string> headers{"choice", plan.size_key};
  for (const PlanTarget& t : plan.targets) headers.push_back(limit_text(t));
  if (priced) headers.push_back("$/hour");
  Table answers(headers);
  for (size_t c = 0; c < plan.choices.size(); ++c) {
    const ChoiceOutcome& out = result.choices[c];
    const std::optional<size_t> shown = out.chosen ? out.chosen : out.closest;
    std::vector<std::string> row{
        plan.choices[c].name,
        out.chosen ? plan.menu[*out.chosen].value : "none (closest " + plan.menu[*shown].value + ")"};
    const PlanPoint* p = out.point(*shown);
    for (size_t t = 0; t < plan.targets.size(); ++t)
      row.push_back(target_cell(plan.targets[t], p->mean[t], p->worst[t], seeds));
    if (priced) row.push_back(price_text(prepared.usd_per_hour[c][*shown]));
    answers.add_row(std::move(row));
  }
  answers.print(os);

  os << "\nFrontier (every point run; pass: the mean over its seeds meets every target):\n";
  std::vector<std::string> frontier_headers{"choice", plan.size_key, "seeds"};
  for (const PlanTarget& t : plan.targets) frontier_headers.push_back(t.name);
  frontier_headers.push_back("verdict");
  Table frontier(frontier_headers);
  for (size_t c = 0; c < plan.choices.size(); ++c) {
    for (const PlanPoint& p : result.choices[c].points) {
      std::vector<std::string> row{plan.choices[c].name, plan.menu[p.size].value, seed_list_text(p.seeds)};
      for (size_t t = 0; t < plan.targets.size(); ++t)
        row.push_back(format_target_value(plan.targets[t], p.mean[t]));
      std::string verdict = p.pass ? "pass" : "fail";
      if (result.choices[c].chosen == p.size) verdict += " (chosen)";
      if (result.choices[c].binding == p.size) verdict += " (binding)";
      row.push_back(verdict);
      frontier.add_row(std::move(row));
    }
  }
  frontier.print(os);

  const PlanDirection direction = plan_direction(plan.objective);
  os << "\nBinding constraint (the next " << direction.harder
     << " size, run with every seed) and what the TTFT is made of:\n";
  for (size_t c = 0; c < plan.choices.size(); ++c) {
    const ChoiceOutcome& out = result.choices[c];
    const std::string& name = plan.choices[c].name;
    if (out.binding) {
      const PlanPoint* below = out.point(*out.binding);
      os << "  " << name << " at " << plan.menu[*out.binding].value << ": "
         << misses_text(plan.targets, *below) << "\n"
         << "      " << breakdown_text(*below) << "\n";
      const PlanPoint* chosen = out.point(*out.chosen);
      os << "  " << name << " at " << plan.menu[*out.chosen].value << " (chosen): " << breakdown_text(*chosen)
         << "\n";
    } else if (out.chosen) {
      os << "  " << name << ": " << plan.menu[*out.chosen].value << " is the " << direction.best
         << " size on the menu and meets every target: nothing binds (the menu could go further)\n"
         << "      " << breakdown_text(*out.point(*out.chosen)) << "\n";
    } else {
      const PlanPoint* closest = out.point(*out.closest);
      os << "  " << name << ": no size on the menu meets every target; the closest, "
         << plan.menu[*out.closest].value << ", " << misses_text(plan.targets, *closest) << "\n      "
         << breakdown_text(*closest) << "\n";
    }
  }

  bool monotone = true;
  for (const ChoiceOutcome& out : result.choices) monotone = monotone && out.non_monotone.empty();
  os << "\nMonotonicity: ";
  if (monotone) {
    os << "on every point run, a " << direction.easier << " size never turned a pass into a fail\n";
  } else {
    os << "NOT monotone, so the bisection's answer may not be the " << direction.best << " passing size:\n";
    for (const ChoiceOutcome& out : result.choices) {
      for (const std::string& line : out.non_monotone) os << "  " << line << "\n";
    }
  }

  std::optional<size_t> best = recommended_choice(result, plan.objective, prepared.usd_per_hour);
  os << "\nVerdict: ";
  if (best) {
    const size_t size = *result.choices[*best].chosen;
    os << plan.choices[*best].name << " with " << plan.size_key << " = " << plan.menu[size].value;
    if (prepared.usd_per_hour[*best][size])
      os << " ($" << fixed("%.2f", *prepared.usd_per_hour[*best][size]) << "/hour)";
    os << (plan.objective == PlanObjective::kLeastCost ? ", the cheapest" : ", the " + direction.best)
       << " that meets every target";
    std::string others;
    for (size_t c = 0; c < plan.choices.size(); ++c) {
      if (c == *best) continue;
      const ChoiceOutcome& out = result.choices[c];
      others += std::string(others.empty() ? "" : "; ") + plan.choices[c].name +
                (out.chosen ? (plan.objective == PlanObjective::kMostSize ? " reaches " : " needs ") +
                                  plan.menu[*out.chosen].value
                            : std::string(" meets them at no size on the menu"));
    }
    os << (others.empty() ? "" : " (" + others + ")") << "\n";
  } else {
    // The closest point over every choice: the one whose worst target is missed by least.
    double least = INFINITY;
    size_t closest_choice = 0;
    for (size_t c = 0; c < plan.choices.size(); ++c) {
      const double worst =
          worst_shortfall(plan.targets, *result.choices[c].point(*result.choices[c].closest));
      if (worst < least) {
        least = worst;
        closest_choice = c;
      }
    }
    const ChoiceOutcome& out = result.choices[closest_choice];
    os << "no size on the menu meets every target for any choice. The closest point is "
       << plan.choices[closest_choice].name << " at " << plan.menu[*out.closest].value << ", which "
       << misses_text(plan.targets, *out.point(*out.closest)) << "\n";
  }
  os << "\nSimulations: " << result.simulations << " in " << result.rounds
     << (result.rounds == 1 ? " round, " : " rounds, ") << fixed("%.1f", wall_s) << " s wall (" << jobs
     << " at once)\n";
}

nlohmann::json result_json(const std::string& file, const PreparedPlan& prepared,
                           const PlanSearchResult& result, double wall_s, int jobs) {
  const PlanFile& plan = prepared.plan;
  auto index = [&](const std::optional<size_t>& i) -> nlohmann::json {
    return i ? nlohmann::json(plan.menu[*i].value) : nlohmann::json(nullptr);
  };
  auto number = [](double v) -> nlohmann::json {
    return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
  };
  nlohmann::json choices = nlohmann::json::array();
  for (size_t c = 0; c < plan.choices.size(); ++c) {
    const ChoiceOutcome& out = result.choices[c];
    nlohmann::json points = nlohmann::json::array();
    for (const PlanPoint& p : out.points) {
      nlohmann::json targets = nlohmann::json::object();
      for (size_t t = 0; t < plan.targets.size(); ++t) {
        targets[plan.targets[t].name] = {{"mean", number(p.mean[t])},
                                         {"worst", number(p.worst[t])},
                                         {"limit", plan.targets[t].limit},
                                         {"met", meets(plan.targets[t], p.mean[t])}};
      }
      nlohmann::json parts = nlohmann::json::object();
      for (const auto& [name, value] : ttft_parts(p)) parts[name] = number(value);
      const std::optional<double>& usd = prepared.usd_per_hour[c][p.size];
      points.push_back({{"size", plan.menu[p.size].value},
                        {"seeds", p.seeds},
                        {"pass", p.pass},
                        {"targets", targets},
                        {"ttft_parts_s", parts},
                        {"usd_per_hour", usd ? nlohmann::json(*usd) : nlohmann::json(nullptr)}});
    }
    choices.push_back({{"name", plan.choices[c].name},
                       {"chosen", index(out.chosen)},
                       {"binding", index(out.binding)},
                       {"closest", index(out.closest)},
                       {"non_monotone", out.non_monotone},
                       {"points", points}});
  }
  std::optional<size_t> best = recommended_choice(result, plan.objective, prepared.usd_per_hour);
  nlohmann::json recommendation = nullptr;
  if (best)
    recommendation = {{"choice", plan.choices[*best].name},
                      {"size", plan.menu[*result.choices[*best].chosen].value}};
  return {{"plan_file", file},
          {"plan", plan_json(plan)},
          {"scenario_name", prepared.scenario_name},
          {"seeds", prepared.seeds},
          {"choices", choices},
          {"recommendation", recommendation},
          {"steps", result.steps},
          {"simulations", result.simulations},
          {"rounds", result.rounds},
          {"wall_s", wall_s},
          {"jobs", jobs}};
}

void run_plan(const PlanOptions& options) {
  ConfigNode root = load_config(options.file, "configs/plans");
  PlanFile plan = read_plan_file(root);
  const int jobs = jobs_or_cores(options.jobs);
  PreflightOptions checks;
  checks.concurrent_runs = jobs;
  checks.allow_huge = options.allow_huge;
  PreparedPlan prepared = prepare_plan(plan, checks);
  for (const std::string& w : prepared.warnings) std::cerr << "kvtier: warning: " << w << "\n";
  const bool table = options.format == OutputFormat::kTable;
  if (table) print_header(std::cout, options.file, prepared, jobs);

  PlanSearchOptions search;
  search.targets = plan.targets;
  for (const PlanChoice& c : plan.choices) search.choices.push_back(c.name);
  for (const Override& m : plan.menu) search.sizes.push_back(m.value);
  search.direction = plan_direction(plan.objective);
  search.seeds = prepared.seeds;
  search.parallel = static_cast<size_t>(jobs);
  search.on_step = [&](const std::string& line) {
    if (table) {
      std::cout << line << "\n" << std::flush;
    } else if (!options.quiet) {
      std::cerr << "kvtier plan: " << line << "\n";
    }
  };
  const auto start = std::chrono::steady_clock::now();
  PlanSearchResult result;
  {
    TerminationSignals signals;
    try {
      result = search_plan(search, isolated_plan_evaluator(prepared, jobs));
    } catch (...) {
      if (int signal = TerminationSignals::caught()) TerminationSignals::reraise(signal);
      throw;
    }
  }
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (table) {
    print_result(std::cout, prepared, result, wall_s, jobs);
  } else {
    std::cout << result_json(options.file, prepared, result, wall_s, jobs).dump(2) << "\n";
  }
}

void add_plan_command(CLI::App& app) {
  auto options = std::make_shared<PlanOptions>();
  CLI::App* command = app.add_subcommand("plan",
                                         "Capacity planning: the smallest (or largest) size that meets TTFT, "
                                         "TPOT and hit-rate targets, per choice (docs/planning.md)");
  command->add_option("plan_file", options->file, "Plan file or built-in name (configs/plans/)")->required();
  command->add_option("--jobs", options->jobs, "Simulations at once (default: one per core)")
      ->check(CLI::PositiveNumber);
  command->add_flag("--quiet", options->quiet, "With --format json, no reasoning on stderr");
  command->add_flag("--allow-huge", options->allow_huge,
                    "Run even when the estimated events or memory pass the bounds (docs/robustness.md)");
  add_format_option(*command, options->format);
  command->callback([options] { run_plan(*options); });
}

const CommandRegistration registration(57, add_plan_command);

}  // namespace
}  // namespace kvtier
