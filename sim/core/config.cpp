#include "config.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace kvtier {
namespace {

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t substitution = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      diagonal = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, substitution});
    }
  }
  return row[b.size()];
}

std::string format_location(const std::string& file, const YAML::Mark& mark) {
  if (mark.is_null()) return file;
  return file + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

}  // namespace

std::string closest_match(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = std::max<size_t>(2, word.size() / 3) + 1;
  for (const std::string& candidate : candidates) {
    size_t d = edit_distance(word, candidate);
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  }
  return best;
}

ConfigNode::ConfigNode(YAML::Node node, std::shared_ptr<const std::string> file, std::string path)
    : node_(std::move(node)), file_(std::move(file)), path_(std::move(path)) {}

ConfigNode ConfigNode::load_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError(path + ": cannot open file");
  std::stringstream text;
  text << in.rdbuf();
  return load_string(text.str(), path);
}

ConfigNode ConfigNode::load_string(const std::string& text, const std::string& name) {
  try {
    YAML::Node root = YAML::Load(text);
    if (!root.IsMap()) {
      throw ConfigError(name + ": expected a YAML mapping of keys at the top level");
    }
    return ConfigNode(root, std::make_shared<const std::string>(name), "");
  } catch (const YAML::Exception& e) {
    throw ConfigError(format_location(name, e.mark) + ": invalid YAML: " + e.msg);
  }
}

namespace {

// One step of a --set path: "tiers[1]" is the key "tiers" and the list index 1.
struct PathStep {
  std::string key;
  int index = -1;
};

std::vector<PathStep> parse_set_path(std::string_view dotted_path) {
  std::vector<PathStep> steps;
  std::string_view rest = dotted_path;
  while (true) {
    size_t dot = rest.find('.');
    std::string_view part = rest.substr(0, dot);
    PathStep step;
    size_t bracket = part.find('[');
    step.key = std::string(part.substr(0, bracket));
    if (bracket != std::string_view::npos) {
      std::string_view index = part.substr(bracket + 1);
      if (index.empty() || index.back() != ']' || index.size() < 2)
        step.key.clear();
      else if (std::from_chars(index.data(), index.data() + index.size() - 1, step.index).ec != std::errc())
        step.key.clear();
    }
    if (step.key.empty()) {
      throw ConfigError("--set " + std::string(dotted_path) +
                        ": expected a key path such as cache.tiers[1].capacity");
    }
    steps.push_back(step);
    if (dot == std::string_view::npos) return steps;
    rest.remove_prefix(dot + 1);
  }
}

}  // namespace

void ConfigNode::set(std::string_view dotted_path, std::string_view yaml_value) {
  YAML::Node value;
  try {
    value = YAML::Load(std::string(yaml_value));
  } catch (const YAML::Exception& e) {
    throw ConfigError("--set " + std::string(dotted_path) + ": invalid value: " + e.msg);
  }
  auto fail = [&](const std::string& what) {
    throw ConfigError("--set " + std::string(dotted_path) + ": " + what);
  };
  // yaml-cpp's operator[] returns handles that alias the tree, so walking with copies edits in place.
  YAML::Node cursor = node_;
  std::vector<PathStep> steps = parse_set_path(dotted_path);
  for (size_t i = 0; i < steps.size(); ++i) {
    const PathStep& step = steps[i];
    bool last = i + 1 == steps.size();
    if (cursor[step.key] && !cursor[step.key].IsMap() &&
        !(step.index >= 0 && cursor[step.key].IsSequence()) && !(last && step.index < 0)) {
      fail("'" + step.key + "' is not a mapping");
    }
    YAML::Node next = cursor[step.key];
    if (step.index >= 0) {
      if (!next.IsSequence() || static_cast<size_t>(step.index) >= next.size()) {
        fail("'" + step.key + "' has no element " + std::to_string(step.index));
      }
      if (last) {
        next[step.index] = value;
        return;
      }
      YAML::Node element = next[step.index];
      cursor.reset(element);
      continue;
    }
    if (last) {
      cursor[step.key] = value;
      return;
    }
    cursor.reset(next);
  }
}

std::string ConfigNode::child_path(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

std::string ConfigNode::location() const {
  return format_location(*file_, node_.Mark());
}

void ConfigNode::fail(std::string_view what) const {
  std::string where = location();
  throw ConfigError(where + ": " + (path_.empty() ? "" : path_ + ": ") + std::string(what));
}

std::string ConfigNode::directory() const {
  return std::filesystem::path(*file_).parent_path().string();
}

bool ConfigNode::has(std::string_view key) const {
  return node_.IsMap() && node_[std::string(key)].IsDefined() && !node_[std::string(key)].IsNull();
}

ConfigNode ConfigNode::child(std::string_view key) const {
  if (!node_.IsMap()) fail("expected a mapping");
  if (!has(key)) fail("missing required key '" + std::string(key) + "'");
  return ConfigNode(node_[std::string(key)], file_, child_path(key));
}

std::optional<ConfigNode> ConfigNode::optional_child(std::string_view key) const {
  if (!has(key)) return std::nullopt;
  return child(key);
}

std::vector<ConfigNode> ConfigNode::elements() const {
  if (!node_.IsSequence()) fail("expected a list");
  std::vector<ConfigNode> out;
  for (size_t i = 0; i < node_.size(); ++i) {
    out.push_back(ConfigNode(node_[i], file_, path_ + "[" + std::to_string(i) + "]"));
  }
  return out;
}

std::vector<std::string> ConfigNode::keys() const {
  if (!node_.IsMap()) fail("expected a mapping");
  std::vector<std::string> out;
  for (const auto& entry : node_) out.push_back(entry.first.Scalar());
  return out;
}

std::string ConfigNode::as_string() const {
  if (!node_.IsScalar()) fail("expected a single value");
  return node_.Scalar();
}

double ConfigNode::as_number() const {
  std::string text = as_string();
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) {
    fail("expected a number, got '" + text + "'");
  }
  return value;
}

int64_t ConfigNode::as_integer() const {
  std::string text = as_string();
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) fail("expected an integer, got '" + text + "'");
  return value;
}

double ConfigNode::as_quantity(UnitKind kind) const {
  try {
    return parse_quantity(as_string(), kind);
  } catch (const UnitError& e) {
    fail(e.what());
  }
}

std::string ConfigNode::string(std::string_view key) const {
  return child(key).as_string();
}
std::string ConfigNode::string(std::string_view key, std::string_view fallback) const {
  return has(key) ? string(key) : std::string(fallback);
}
double ConfigNode::number(std::string_view key) const {
  return child(key).as_number();
}
double ConfigNode::number(std::string_view key, double fallback) const {
  return has(key) ? number(key) : fallback;
}
int64_t ConfigNode::integer(std::string_view key) const {
  return child(key).as_integer();
}
int64_t ConfigNode::integer(std::string_view key, int64_t fallback) const {
  return has(key) ? integer(key) : fallback;
}
bool ConfigNode::boolean(std::string_view key, bool fallback) const {
  if (!has(key)) return fallback;
  ConfigNode c = child(key);
  std::string text = c.as_string();
  if (text == "true") return true;
  if (text == "false") return false;
  c.fail("expected true or false, got '" + text + "'");
}
double ConfigNode::quantity(std::string_view key, UnitKind kind) const {
  return child(key).as_quantity(kind);
}
double ConfigNode::quantity(std::string_view key, UnitKind kind, double fallback) const {
  return has(key) ? quantity(key, kind) : fallback;
}

void ConfigNode::allow_keys(std::initializer_list<std::string_view> known) const {
  allow_keys(std::vector<std::string>(known.begin(), known.end()));
}

void ConfigNode::allow_keys(const std::vector<std::string>& known) const {
  if (!node_.IsMap()) fail("expected a mapping");
  for (const auto& entry : node_) {
    const std::string& key = entry.first.Scalar();
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    std::string message = "unknown key '" + key + "'";
    std::string suggestion = closest_match(key, known);
    if (!suggestion.empty()) message += " (did you mean '" + suggestion + "'?)";
    ConfigNode(entry.first, file_, child_path(key)).fail(message);
  }
}

}  // namespace kvtier
