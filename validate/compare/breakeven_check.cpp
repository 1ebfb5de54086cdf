#include "validate/compare/breakeven_check.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "sim/core/breakeven.h"
#include "sim/core/config.h"
#include "sim/core/cost_model.h"
#include "sim/core/json_text.h"
#include "sim/core/kv_layout.h"

namespace kvtier::validation {
namespace {

using T = nlohmann::json::value_t;

// json[key] checked for its type, failing as "name: key.path: expected ...".
const nlohmann::json& member(const nlohmann::json& j, const std::string& key, const std::string& where,
                             T type, const char* expected) {
  const bool numeric = type == T::number_float || type == T::number_integer;
  auto same_kind = [&](const nlohmann::json& v) {
    if (type == T::number_float) return v.is_number();
    if (type == T::number_integer) return v.is_number_integer();
    return v.type() == type;
  };
  if (!j.is_object() || !j.contains(key) || !same_kind(j.at(key)) ||
      (numeric && j.at(key).get<double>() < 0)) {
    throw ConfigError(where + key + ": expected " + expected);
  }
  return j.at(key);
}

MeasuredSweep::Point point_of(const nlohmann::json& p, const std::string& where) {
  MeasuredSweep::Point point;
  point.kv = member(p, "kv", where, T::string, "the lower tier's KV layout").get<std::string>();
  const std::string path = member(p, "path", where, T::string, "dram or nvme").get<std::string>();
  const std::optional<Medium> medium = parse_medium(path);
  if (!medium || (*medium != Medium::kDram && *medium != Medium::kNvme)) {
    throw ConfigError(where + "path: expected dram or nvme, got '" + path + "'");
  }
  point.path = *medium;
  point.prefix_tokens =
      member(p, "prefix_tokens", where, T::number_integer, "a positive token count").get<int64_t>();
  if (point.prefix_tokens <= 0) throw ConfigError(where + "prefix_tokens: expected a positive token count");
  point.times.load_s = member(p, "load_s", where, T::number_float, "a number of seconds").get<double>();
  point.times.hit_s = member(p, "hit_s", where, T::number_float, "a number of seconds").get<double>();
  point.times.miss_s = member(p, "miss_s", where, T::number_float, "a number of seconds").get<double>();
  return point;
}

// What the simulator charges a load's conversion from `tier` to `hbm` on one GPU
// (charged_conversion_bytes_per_s); infinite when the layouts match.
double conversion_bytes_per_s(const SweepPricing& pricing, const KvLayout& tier, const KvLayout& hbm) {
  if (tier == hbm) return std::numeric_limits<double>::infinity();
  return charged_conversion_bytes_per_s(pricing.calibration, pricing.model, tier, hbm,
                                        pricing.hardware.gpu.hbm_bandwidth, 1);
}

}  // namespace

MeasuredSweep parse_measured_sweep(const std::string& text, const std::string& name) {
  const nlohmann::json in = parse_json_text(text, name);
  const std::string where = name + ": ";
  MeasuredSweep sweep;
  sweep.source = name;
  sweep.model = member(in, "model", where, T::string, "the model card (--model of kvtier-hw breakeven)")
                    .get<std::string>();
  sweep.hbm_kv = member(in, "hbm_kv", where, T::string, "HBM's KV layout").get<std::string>();
  sweep.new_tokens = member(in, "new_tokens", where, T::number_integer, "a token count").get<int64_t>();
  sweep.command = in.value("command", "");
  sweep.device = in.value("device", "");
  const nlohmann::json& points = member(in, "points", where, T::array, "a list of measured points");
  for (size_t i = 0; i < points.size(); ++i) {
    sweep.points.push_back(point_of(points[i], where + "points[" + std::to_string(i) + "]."));
  }
  return sweep;
}

MeasuredSweep load_measured_sweep(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError(path + ": cannot read the file");
  std::stringstream text;
  text << in.rdbuf();
  return parse_measured_sweep(text.str(), path);
}

BreakevenTimes predict_breakeven(const SweepPricing& pricing, const std::string& hbm_kv,
                                 const std::string& tier_kv, Medium path, int64_t prefix_tokens,
                                 int64_t new_tokens) {
  HardwareConfig hardware = pricing.hardware;
  if (pricing.calibration) overlay_calibration(*pricing.calibration, hardware);
  hardware.gpu.count = 1;
  const std::optional<LoadPath> load = load_path(hardware, path);
  if (!load) {
    throw ConfigError(hardware.name + " has no " + std::string(medium_name(path)) +
                      " path to load a prefix over");
  }
  const KvLayout hbm = resolve_kv_layout(pricing.model, hbm_kv);
  const KvLayout tier = resolve_kv_layout(pricing.model, tier_kv);
  std::optional<StepCosts> step_costs;
  if (pricing.calibration) step_costs = serving_step_costs(*pricing.calibration, pricing.model);
  const CostModel cost(pricing.model, hardware, static_cast<double>(hbm.bytes_per_token()), step_costs);
  const auto tokens = static_cast<double>(prefix_tokens);
  const double moved = static_cast<double>(tier.bytes_per_token()) * tokens;
  const double converted = static_cast<double>(tier.bytes_per_token() + hbm.bytes_per_token()) * tokens;
  BreakevenTimes t;
  t.load_s = load->latency + moved / load->bandwidth + converted / conversion_bytes_per_s(pricing, tier, hbm);
  t.hit_s = t.load_s + cost.prefill_seconds(prefix_tokens, new_tokens);
  t.miss_s = cost.prefill_seconds(0, prefix_tokens + new_tokens);
  return t;
}

const char* winner_name(Winner winner) {
  return winner == Winner::kLoad ? "load" : "recompute";
}

Crossover crossover_of(const std::vector<BreakevenTimes>& times) {
  Crossover c;
  c.final_winner = winner_of(times.back());
  c.index = times.size() - 1;
  while (c.index > 0 && winner_of(times[c.index - 1]) == c.final_winner) --c.index;
  return c;
}

bool SeriesCheck::agrees() const {
  const auto apart =
      static_cast<long>(predicted_crossover.index) - static_cast<long>(measured_crossover.index);
  return predicted_crossover.final_winner == measured_crossover.final_winner && std::labs(apart) <= 1;
}

bool BreakevenCheck::passed() const {
  return std::all_of(series.begin(), series.end(), [](const SeriesCheck& s) { return s.agrees(); });
}

BreakevenCheck check_breakeven(const MeasuredSweep& measured, const BreakevenPredictor& predict) {
  BreakevenCheck check;
  check.source = measured.source;
  check.model = measured.model;
  check.device = measured.device;
  check.new_tokens = measured.new_tokens;
  std::vector<std::vector<const MeasuredSweep::Point*>> groups;
  for (const MeasuredSweep::Point& p : measured.points) {
    auto same = [&](const std::vector<const MeasuredSweep::Point*>& g) {
      return g[0]->kv == p.kv && g[0]->path == p.path;
    };
    auto group = std::find_if(groups.begin(), groups.end(), same);
    if (group == groups.end())
      groups.push_back({&p});
    else
      group->push_back(&p);
  }
  for (std::vector<const MeasuredSweep::Point*>& group : groups) {
    const std::string label = group[0]->kv + " from " + std::string(medium_name(group[0]->path));
    std::sort(group.begin(), group.end(),
              [](auto* a, auto* b) { return a->prefix_tokens < b->prefix_tokens; });
    if (group.size() < 2) throw ConfigError(measured.source + ": " + label + " has fewer than two lengths");
    SeriesCheck s{group[0]->kv, group[0]->path, {}, {}, {}, {}, {}};
    for (const MeasuredSweep::Point* p : group) {
      if (!s.prefix_tokens.empty() && s.prefix_tokens.back() == p->prefix_tokens) {
        throw ConfigError(measured.source + ": " + label + " is measured twice at " +
                          std::to_string(p->prefix_tokens) + " tokens");
      }
      s.prefix_tokens.push_back(p->prefix_tokens);
      s.measured.push_back(p->times);
      s.predicted.push_back(predict(p->kv, p->path, p->prefix_tokens));
    }
    s.predicted_crossover = crossover_of(s.predicted);
    s.measured_crossover = crossover_of(s.measured);
    check.series.push_back(std::move(s));
  }
  return check;
}

std::string crossover_text(const SeriesCheck& series, const Crossover& crossover) {
  if (crossover.index == 0) return "none in range";
  const int64_t tokens = series.prefix_tokens[crossover.index];
  return tokens % 1024 == 0 ? std::to_string(tokens / 1024) + "K" : std::to_string(tokens);
}

nlohmann::json to_json(const BreakevenCheck& check) {
  auto times_json = [](const BreakevenTimes& t) {
    return nlohmann::json{{"load_s", t.load_s},
                          {"hit_s", t.hit_s},
                          {"miss_s", t.miss_s},
                          {"winner", winner_name(winner_of(t))}};
  };
  auto crossover_tokens = [](const SeriesCheck& s, const Crossover& c) {
    return c.index == 0 ? nlohmann::json(nullptr) : nlohmann::json(s.prefix_tokens[c.index]);
  };
  nlohmann::json series = nlohmann::json::array();
  for (const SeriesCheck& s : check.series) {
    nlohmann::json points = nlohmann::json::array();
    for (size_t i = 0; i < s.prefix_tokens.size(); ++i) {
      points.push_back({{"prefix_tokens", s.prefix_tokens[i]},
                        {"predicted", times_json(s.predicted[i])},
                        {"measured", times_json(s.measured[i])}});
    }
    series.push_back({{"kv", s.kv},
                      {"path", medium_name(s.path)},
                      {"predicted_crossover_tokens", crossover_tokens(s, s.predicted_crossover)},
                      {"measured_crossover_tokens", crossover_tokens(s, s.measured_crossover)},
                      {"final_winner",
                       {{"predicted", winner_name(s.predicted_crossover.final_winner)},
                        {"measured", winner_name(s.measured_crossover.final_winner)}}},
                      {"agrees", s.agrees()},
                      {"points", points}});
  }
  return {
      {"source", check.source},         {"model", check.model},           {"device", check.device},
      {"hardware", check.hardware},     {"calibrated", check.calibrated}, {"step_costs", check.step_costs},
      {"new_tokens", check.new_tokens}, {"passed", check.passed()},       {"series", series}};
}

}  // namespace kvtier::validation
