#include "sim/engine/sweep_file.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

namespace kvtier {
namespace {

std::vector<SweepAxis> read_axes(const ConfigNode& node) {
  if (!node.is_map()) node.fail("expected a mapping of key.path: [values]");
  std::vector<std::string> keys = node.keys();
  if (keys.empty()) node.fail("expected at least one key.path: [values]");
  std::vector<SweepAxis> axes;
  for (const std::string& key : keys) {
    ConfigNode list = node.child(key);
    if (!list.is_sequence() || list.elements().empty()) list.fail("expected a non-empty list of values");
    SweepAxis axis{key, {}};
    for (const ConfigNode& value : list.elements()) axis.values.push_back(scalar_override(key, value));
    axes.push_back(std::move(axis));
  }
  return axes;
}

void require_equal_lengths(const ConfigNode& zip, const std::vector<SweepAxis>& axes) {
  for (const SweepAxis& axis : axes) {
    if (axis.values.size() != axes[0].values.size()) {
      zip.child(axis.key).fail("expected " + std::to_string(axes[0].values.size()) + " values, as many as zip." +
                               axes[0].key + " has (zip walks its lists together), got " +
                               std::to_string(axis.values.size()));
    }
  }
}

// A key is swept once, and never both swept and set (the set value would be overridden at every point).
void require_distinct_keys(const ConfigNode& root, const SweepFile& sweep) {
  std::set<std::string> swept;
  for (const SweepAxis& axis : sweep.grid) swept.insert(axis.key);
  for (const SweepAxis& axis : sweep.zip) {
    if (!swept.insert(axis.key).second) root.child("zip").child(axis.key).fail("already swept by grid");
  }
  for (const Override& o : sweep.fixed) {
    if (swept.contains(o.path)) root.child("set").child(o.path).fail("also swept: set it or sweep it");
  }
  if (!sweep.seeds.empty() && swept.contains("seed")) root.child("seeds").fail("seed is also swept");
}

std::string zero_padded(size_t value, size_t width) {
  std::string text = std::to_string(value);
  text.insert(0, width - std::min(width, text.size()), '0');
  return text;
}

size_t point_count(const SweepFile& sweep) {
  size_t count = sweep.zip.empty() ? 1 : sweep.zip[0].values.size();
  for (const SweepAxis& axis : sweep.grid) count *= axis.values.size();
  return count;
}

// The values of point `p`: the grid's keys as the digits of p (the last grid key fastest), the zip's
// index in the last place.
std::vector<Override> point_values(const SweepFile& sweep, size_t p) {
  size_t zip_length = sweep.zip.empty() ? 1 : sweep.zip[0].values.size();
  size_t zip_index = p % zip_length;
  size_t rest = p / zip_length;
  std::vector<Override> values(sweep.grid.size());
  for (size_t a = sweep.grid.size(); a-- > 0;) {
    values[a] = sweep.grid[a].values[rest % sweep.grid[a].values.size()];
    rest /= sweep.grid[a].values.size();
  }
  for (const SweepAxis& axis : sweep.zip) values.push_back(axis.values[zip_index]);
  return values;
}

nlohmann::json axes_json(const std::vector<SweepAxis>& axes) {
  nlohmann::json list = nlohmann::json::array();
  for (const SweepAxis& axis : axes) {
    nlohmann::json values = nlohmann::json::array();
    for (const Override& v : axis.values) values.push_back(v.value);
    list.push_back({{"key", axis.key}, {"values", values}});
  }
  return list;
}

}  // namespace

Override scalar_override(const std::string& key, const ConfigNode& value) {
  if (!value.is_scalar()) value.fail("expected a scalar value (a number, a size such as 64GiB, a name)");
  return {key, value.as_string(), value.where()};
}

std::vector<uint64_t> read_seed_list(const ConfigNode& node) {
  std::vector<uint64_t> seeds;
  if (node.is_scalar()) {
    int64_t count = node.as_integer();
    if (count < 1) node.fail("expected a count of seeds of at least 1, or a list of seeds");
    for (int64_t s = 1; s <= count; ++s) seeds.push_back(static_cast<uint64_t>(s));
    return seeds;
  }
  if (!node.is_sequence() || node.elements().empty()) node.fail("expected a count of seeds or a non-empty list");
  for (const ConfigNode& seed : node.elements()) {
    uint64_t value = seed.as_unsigned();
    if (std::find(seeds.begin(), seeds.end(), value) != seeds.end()) seed.fail("seed given twice");
    seeds.push_back(value);
  }
  return seeds;
}

SweepFile read_sweep_file(const ConfigNode& root) {
  root.allow_keys({"scenario", "trace", "set", "grid", "zip", "seeds"});
  SweepFile sweep;
  sweep.scenario = root.string("scenario");
  sweep.trace = root.string("trace", "");
  if (auto set = root.optional_child("set")) {
    if (!set->is_map()) set->fail("expected a mapping of key.path: value");
    for (const std::string& key : set->keys()) sweep.fixed.push_back(scalar_override(key, set->child(key)));
  }
  if (auto grid = root.optional_child("grid")) sweep.grid = read_axes(*grid);
  if (auto zip = root.optional_child("zip")) {
    sweep.zip = read_axes(*zip);
    require_equal_lengths(*zip, sweep.zip);
  }
  if (auto seeds = root.optional_child("seeds")) sweep.seeds = read_seed_list(*seeds);
  if (sweep.grid.empty() && sweep.zip.empty() && sweep.seeds.empty()) {
    root.fail("nothing varies: expected grid:, zip: or seeds:");
  }
  require_distinct_keys(root, sweep);
  return sweep;
}

SweepFile sweep_from_arguments(const std::string& scenario, const std::string& trace,
                               const std::vector<std::string>& set_arguments,
                               const std::vector<std::string>& sweep_arguments) {
  SweepFile sweep{scenario, trace, {}, {}, {}, {}};
  for (const std::string& text : set_arguments) sweep.fixed.push_back(parse_set_argument(text));
  for (const std::string& text : sweep_arguments) {
    Override list = parse_set_argument(text);
    std::string origin = "--sweep " + text;
    SweepAxis axis{list.path, {}};
    size_t start = 0;
    while (start <= list.value.size()) {
      size_t comma = std::min(list.value.find(',', start), list.value.size());
      std::string value = list.value.substr(start, comma - start);
      if (value.empty()) throw ConfigError(origin + ": expected key.path=v1,v2,... without empty values");
      axis.values.push_back({list.path, value, origin});
      start = comma + 1;
    }
    for (const SweepAxis& earlier : sweep.grid) {
      if (earlier.key == axis.key) throw ConfigError(origin + ": " + axis.key + " is already swept");
    }
    sweep.grid.push_back(std::move(axis));
  }
  return sweep;
}

std::vector<std::string> swept_keys(const SweepFile& sweep) {
  std::vector<std::string> keys;
  for (const SweepAxis& axis : sweep.grid) keys.push_back(axis.key);
  for (const SweepAxis& axis : sweep.zip) keys.push_back(axis.key);
  return keys;
}

std::vector<SweepPoint> expand_sweep(const SweepFile& sweep) {
  size_t points = point_count(sweep);
  size_t width = std::to_string(points - 1).size();
  std::vector<SweepPoint> expanded;
  for (size_t p = 0; p < points; ++p) {
    std::string id = zero_padded(p, width);
    id.insert(id.begin(), 'p');
    std::vector<Override> values = point_values(sweep, p);
    if (sweep.seeds.empty()) {
      expanded.push_back({expanded.size(), id, values, std::nullopt});
      continue;
    }
    for (uint64_t seed : sweep.seeds) {
      expanded.push_back({expanded.size(), id + "-seed" + std::to_string(seed), values, seed});
    }
  }
  return expanded;
}

std::vector<Override> point_overrides(const SweepFile& sweep, const SweepPoint& point) {
  std::vector<Override> overrides = sweep.fixed;
  if (!sweep.trace.empty()) overrides.push_back(trace_override(sweep.trace));
  overrides.insert(overrides.end(), point.values.begin(), point.values.end());
  if (point.seed) overrides.push_back({"seed", std::to_string(*point.seed), "seeds: " + std::to_string(*point.seed)});
  return overrides;
}

std::string canonical_text(const SweepFile& sweep) {
  nlohmann::json fixed = nlohmann::json::object();
  for (const Override& o : sweep.fixed) fixed[o.path] = o.value;
  nlohmann::json text = {{"scenario", sweep.scenario}, {"trace", sweep.trace}, {"set", fixed},
                         {"grid", axes_json(sweep.grid)}, {"zip", axes_json(sweep.zip)},
                         {"seeds", sweep.seeds}};
  return text.dump(2) + "\n";
}

}  // namespace kvtier
