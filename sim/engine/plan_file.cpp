#include "sim/engine/plan_file.h"

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>
#include <optional>

#include "sim/engine/sweep_file.h"

namespace kvtier {
namespace {

struct TargetKind {
  std::string name;
  std::string metric;
  bool duration;  // else a fraction in (0, 1]
};

const std::vector<TargetKind>& target_kinds() {
  static const std::vector<TargetKind> kinds = {
      {"ttft_p50", "ttft_s.p50", true},     {"ttft_p95", "ttft_s.p95", true},
      {"ttft_p99", "ttft_s.p99", true},     {"tpot_p50", "tpot_s.p50", true},
      {"tpot_p95", "tpot_s.p95", true},     {"tpot_p99", "tpot_s.p99", true},
      {"hit_rate", "hit_rate_total", false}};
  return kinds;
}

std::vector<PlanTarget> read_targets(const ConfigNode& node) {
  if (!node.is_map() || node.keys().empty())
    node.fail("expected a mapping of target: limit, such as {ttft_p95: 2s}");
  node.allow_keys(plan_target_names());
  std::vector<PlanTarget> targets;
  // In the fixed order of plan_target_names(), whatever the file's.
  for (const TargetKind& kind : target_kinds()) {
    auto value = node.optional_child(kind.name);
    if (!value) continue;
    PlanTarget t{kind.name, kind.metric, 0, !kind.duration, value->as_string()};
    if (kind.duration) {
      t.limit = value->as_quantity(UnitKind::kDuration);
      if (t.limit <= 0) value->fail("expected a positive duration, such as 2s or 100ms");
    } else {
      t.limit = value->as_number();
      if (t.limit <= 0 || t.limit > 1)
        value->fail("expected a fraction of the input tokens in (0, 1], such as 0.5");
    }
    targets.push_back(std::move(t));
  }
  return targets;
}

std::vector<Override> read_overrides(const ConfigNode& node, const std::string& what) {
  if (!node.is_map()) node.fail("expected a mapping of key.path: value (" + what + ")");
  std::vector<Override> overrides;
  for (const std::string& key : node.keys()) overrides.push_back(scalar_override(key, node.child(key)));
  return overrides;
}

std::optional<double> as_plain_number(const std::string& text) {
  double value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// The menu's values as numbers to compare (sizes in bytes, or plain numbers), or nothing when they are
// names, whose order the file decides.
std::optional<std::vector<double>> menu_magnitudes(const std::vector<ConfigNode>& values) {
  for (bool sizes : {true, false}) {
    std::vector<double> magnitudes;
    for (const ConfigNode& v : values) {
      std::string text = v.as_string();
      std::optional<double> m;
      if (sizes) {
        try {
          m = parse_bytes(text);
        } catch (const UnitError&) {
        }
      } else {
        m = as_plain_number(text);
      }
      if (!m) break;
      magnitudes.push_back(*m);
    }
    if (magnitudes.size() == values.size()) return magnitudes;
  }
  return std::nullopt;
}

void read_size(const ConfigNode& node, PlanFile& plan) {
  if (!node.is_map()) node.fail("expected {key: key.path, menu: [values, small to large]}");
  node.allow_keys({"key", "menu"});
  plan.size_key = node.string("key");
  ConfigNode menu = node.child("menu");
  if (!menu.is_sequence() || menu.elements().empty())
    menu.fail("expected a non-empty list of values, small to large");
  std::vector<ConfigNode> values = menu.elements();
  for (size_t i = 0; i < values.size(); ++i) {
    plan.menu.push_back(scalar_override(plan.size_key, values[i]));
    for (size_t j = 0; j < i; ++j) {
      if (plan.menu[j].value == plan.menu[i].value) values[i].fail("given twice in the menu");
    }
  }
  if (auto magnitudes = menu_magnitudes(values)) {
    for (size_t i = 1; i < values.size(); ++i) {
      if ((*magnitudes)[i] <= (*magnitudes)[i - 1]) {
        values[i].fail("expected the menu ordered small to large (the search bisects it), but " +
                       plan.menu[i].value + " is not larger than " + plan.menu[i - 1].value);
      }
    }
  }
}

// The size key is the plan's to vary, and a seed the confirmation's: neither may be fixed elsewhere.
void require_free_keys(const ConfigNode& root, const PlanFile& plan) {
  auto check = [&](const std::vector<Override>& overrides, const ConfigNode& where) {
    for (const Override& o : overrides) {
      if (o.path == plan.size_key)
        where.child(o.path).fail("is the size key: the plan chooses it from size.menu");
      if (o.path == "seed" && !plan.seeds.empty()) where.child(o.path).fail("seed is also given by seeds:");
    }
  };
  if (auto set = root.optional_child("set")) check(plan.fixed, *set);
  for (const PlanChoice& c : plan.choices) {
    if (c.overrides.empty()) continue;  // "as-is", or a choice of the scenario as it is
    check(c.overrides, root.child("choices").child(c.name));
    for (const Override& o : c.overrides) {
      for (const Override& f : plan.fixed) {
        if (f.path == o.path)
          root.child("choices").child(c.name).child(o.path).fail("also given by set: set it or vary it");
      }
    }
  }
}

}  // namespace

const std::vector<std::string>& plan_target_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const TargetKind& k : target_kinds()) n.push_back(k.name);
    return n;
  }();
  return names;
}

PlanDirection plan_direction(PlanObjective objective) {
  if (objective == PlanObjective::kMostSize) return {"largest", "smaller", "larger"};
  return {};
}

const char* objective_name(PlanObjective objective) {
  switch (objective) {
    case PlanObjective::kLeastCost:
      return "least_cost";
    case PlanObjective::kMostSize:
      return "most_size";
    case PlanObjective::kLeastSize:
      break;
  }
  return "least_size";
}

PlanFile read_plan_file(const ConfigNode& root) {
  root.allow_keys({"scenario", "variant", "set", "targets", "choices", "size", "objective", "seeds"});
  PlanFile plan;
  plan.scenario = root.string("scenario");
  if (auto variant = root.optional_child("variant")) {
    plan.variant = variant->as_string();
    plan.variant_where = variant->where();
  }
  if (auto set = root.optional_child("set")) plan.fixed = read_overrides(*set, "fixed overrides, as --set");
  plan.targets = read_targets(root.child("targets"));
  if (auto choices = root.optional_child("choices")) {
    if (!choices->is_map() || choices->keys().empty()) {
      choices->fail("expected a mapping of name: {key.path: value, ...}, one entry per alternative");
    }
    for (const std::string& name : choices->keys()) {
      ConfigNode choice = choices->child(name);
      if (name.empty() || name.find_first_of(" \t/") != std::string::npos) {
        choice.fail("expected a choice name without spaces or slashes");
      }
      plan.choices.push_back({name, choice.is_map() && choice.keys().empty()
                                        ? std::vector<Override>{}
                                        : read_overrides(choice, "the overrides of this alternative")});
    }
  } else {
    plan.choices.push_back({"as-is", {}});
  }
  read_size(root.child("size"), plan);
  const std::string objective =
      root.choice("objective", {"least_size", "least_cost", "most_size"}, "least_size");
  plan.objective = objective == "least_cost"  ? PlanObjective::kLeastCost
                   : objective == "most_size" ? PlanObjective::kMostSize
                                              : PlanObjective::kLeastSize;
  if (plan.objective == PlanObjective::kMostSize) std::reverse(plan.menu.begin(), plan.menu.end());
  if (auto objective = root.optional_child("objective")) plan.objective_where = objective->where();
  if (auto seeds = root.optional_child("seeds")) plan.seeds = read_seed_list(*seeds);
  require_free_keys(root, plan);
  return plan;
}

nlohmann::json plan_json(const PlanFile& plan) {
  auto overrides = [](const std::vector<Override>& list) {
    nlohmann::json o = nlohmann::json::object();
    for (const Override& v : list) o[v.path] = v.value;
    return o;
  };
  nlohmann::json targets = nlohmann::json::object();
  for (const PlanTarget& t : plan.targets) targets[t.name] = t.text;
  nlohmann::json choices = nlohmann::json::array();
  for (const PlanChoice& c : plan.choices)
    choices.push_back({{"name", c.name}, {"set", overrides(c.overrides)}});
  nlohmann::json menu = nlohmann::json::array();
  for (const Override& m : plan.menu) menu.push_back(m.value);
  return {{"scenario", plan.scenario},
          {"variant", plan.variant},
          {"set", overrides(plan.fixed)},
          {"targets", targets},
          {"choices", choices},
          {"size", {{"key", plan.size_key}, {"menu", menu}}},
          {"objective", objective_name(plan.objective)},
          {"seeds", plan.seeds}};
}

}  // namespace kvtier
