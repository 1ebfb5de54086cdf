#include "sim/core/config.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>

#include "sim/core/config_schema.h"
#include "sim/core/token_count.h"

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

struct ConfigTree {
  // Where a set() put a value, for locating errors in it and for override_uses().
  struct Override {
    std::string path;  // canonical: "cache.tiers[1].capacity"
    std::string value;
    std::string origin;
    std::vector<std::string> leaves;
  };
  std::string file;
  std::string text;  // the document as loaded, which clone() parses again to keep line and column marks
  std::vector<Override> overrides;
  std::set<std::string> read;  // key paths that readers asked for
  std::shared_ptr<DocumentReads> reads;  // for a schema: what readers asked of each node, when recorded
};

namespace {

// Bounds the walks over a document: aliases let a few bytes of YAML name a very large tree, or a cycle.
constexpr size_t kMaxValues = 100'000;
constexpr size_t kMaxDepth = 1'000;
constexpr size_t kMaxFileBytes = size_t{16} << 20;

std::string join_key(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

std::string join_index(const std::string& path, size_t index) {
  return path + "[" + std::to_string(index) + "]";
}

struct DuplicateKey {
  YAML::Mark mark;  // of the second occurrence
  YAML::Mark first;
  std::string path;
  std::string key;
};

// A walk over a document for keys given twice in one mapping (yaml-cpp keeps both pairs, and lookups
// return the first). Key paths are kept as steps and joined only for the error.
class DuplicateKeySearch {
 public:
  enum class Outcome { kUnique, kDuplicate, kTooLarge };

  Outcome run(const YAML::Node& node) { return visit(node, 0); }
  const DuplicateKey& duplicate() const { return duplicate_; }

 private:
  Outcome visit(const YAML::Node& node, size_t depth) {
    if (++values_ > kMaxValues || depth > kMaxDepth) return Outcome::kTooLarge;
    if (node.IsSequence()) {
      for (size_t i = 0; i < node.size(); ++i) {
        steps_.push_back(join_index("", i));
        if (Outcome o = visit(node[i], depth + 1); o != Outcome::kUnique) return o;
        steps_.pop_back();
      }
    } else if (node.IsMap()) {
      std::map<std::string, YAML::Mark> seen;
      for (const auto& entry : node) {
        if (!entry.first.IsScalar()) continue;
        const std::string& key = entry.first.Scalar();
        steps_.push_back("." + key);
        auto [first, inserted] = seen.emplace(key, entry.first.Mark());
        if (!inserted) {
          duplicate_ = {entry.first.Mark(), first->second, path(), key};
          return Outcome::kDuplicate;
        }
        if (Outcome o = visit(entry.second, depth + 1); o != Outcome::kUnique) return o;
        steps_.pop_back();
      }
    }
    return Outcome::kUnique;
  }

  std::string path() const {
    std::string joined;
    for (const std::string& step : steps_) joined += step;
    return joined;
  }

  size_t values_ = 0;
  std::vector<std::string> steps_;
  DuplicateKey duplicate_;
};

// Throws when `node`, put at `path`, holds a duplicate key, more than kMaxValues values or more than
// kMaxDepth levels; `where` names a mark's place, and `in_file` says whether line numbers mean anything.
void require_unique_keys(const YAML::Node& node, const std::string& path, bool in_file,
                         const std::function<std::string(const YAML::Mark&)>& where) {
  DuplicateKeySearch search;
  DuplicateKeySearch::Outcome outcome = search.run(node);
  if (outcome == DuplicateKeySearch::Outcome::kTooLarge) {
    throw ConfigError(where(YAML::Mark::null_mark()) + ": expected at most " + std::to_string(kMaxValues) +
                      " values and " + std::to_string(kMaxDepth) + " levels (aliases expand to more)");
  }
  if (outcome == DuplicateKeySearch::Outcome::kUnique) return;
  const DuplicateKey& duplicate = search.duplicate();
  std::string key_path = path + duplicate.path;
  if (path.empty() && !key_path.empty() && key_path[0] == '.') key_path.erase(0, 1);
  std::string first = in_file ? " (first at line " + std::to_string(duplicate.first.line + 1) + ")" : "";
  throw ConfigError(where(duplicate.mark) + ": " + key_path + ": duplicate key '" + duplicate.key + "'" + first);
}

// The key paths of the leaves of `value` put at `path`: the path itself for a scalar or an empty value. A
// null removes a key (has() is false for it), so there is nothing for a reader to read.
void collect_leaves(const YAML::Node& value, const std::string& path, std::vector<std::string>& leaves) {
  if (value.IsMap() && value.size() > 0) {
    for (const auto& entry : value) collect_leaves(entry.second, join_key(path, entry.first.Scalar()), leaves);
  } else if (value.IsSequence() && value.size() > 0) {
    for (size_t i = 0; i < value.size(); ++i) collect_leaves(value[i], join_index(path, i), leaves);
  } else if (!value.IsNull()) {
    leaves.push_back(path);
  }
}

// Whether key path `path` is `prefix` or lies under it ("a.b[1]" lies under "a.b" and "a", not "a.bc").
bool within(std::string_view path, std::string_view prefix) {
  if (!path.starts_with(prefix)) return false;
  return path.size() == prefix.size() || path[prefix.size()] == '.' || path[prefix.size()] == '[';
}

}  // namespace

ConfigNode::ConfigNode(YAML::Node node, std::shared_ptr<ConfigTree> tree, std::string path)
    : node_(std::move(node)), tree_(std::move(tree)), path_(std::move(path)) {}

ConfigNode ConfigNode::load_file(const std::string& path) {
  std::error_code ignored;  // then opening the file fails below
  if (std::filesystem::is_directory(path, ignored)) {
    throw ConfigError(path + ": is a directory, expected a YAML file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path + ": cannot open file");
  // Bounded, so that a device such as /dev/zero given as a file ends in an error.
  std::string text(kMaxFileBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) throw ConfigError(path + ": cannot read file");
  if (static_cast<size_t>(in.gcount()) > kMaxFileBytes) {
    throw ConfigError(path + ": larger than 16 MiB, expected a YAML file");
  }
  text.resize(static_cast<size_t>(in.gcount()));
  return load_string(text, path);
}

ConfigNode ConfigNode::load_string(const std::string& text, const std::string& name) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw ConfigError(format_location(name, e.mark) + ": invalid YAML: " + e.msg);
  }
  if (!root.IsMap()) throw ConfigError(name + ": expected a YAML mapping of keys at the top level");
  require_unique_keys(root, "", true, [&](const YAML::Mark& mark) { return format_location(name, mark); });
  auto tree = std::make_shared<ConfigTree>();
  tree->file = name;
  tree->text = text;
  return ConfigNode(root, std::move(tree), "");
}

ConfigNode ConfigNode::clone() const {
  ConfigNode copy = load_string(tree_->text, tree_->file);
  for (const ConfigTree::Override& o : tree_->overrides) copy.set(o.path, o.value, o.origin);
  return copy;
}

const std::string& ConfigNode::file() const {
  return tree_->file;
}

namespace {

// One step of a --set path: "tiers[1]" is the key "tiers" and the list index 1.
struct PathStep {
  std::string key;
  int index = -1;
};

std::vector<PathStep> parse_set_path(std::string_view dotted_path, const std::string& origin) {
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
      else if (std::from_chars(index.data(), index.data() + index.size() - 1, step.index).ec != std::errc() ||
               step.index < 0)
        step.key.clear();
    }
    if (step.key.empty()) throw ConfigError(origin + ": expected a key path such as cache.tiers[1].capacity");
    steps.push_back(step);
    if (dot == std::string_view::npos) return steps;
    rest.remove_prefix(dot + 1);
  }
}

// The path as readers name it, so that "tiers[01]" and "tiers[1]" are one key.
std::string canonical_path(const std::vector<PathStep>& steps) {
  std::string path;
  for (const PathStep& step : steps) {
    path = join_key(path, step.key);
    if (step.index >= 0) path = join_index(path, static_cast<size_t>(step.index));
  }
  return path;
}

YAML::Node load_value(std::string_view yaml_value, const std::string& origin) {
  YAML::Node value;
  try {
    value = YAML::Load(std::string(yaml_value));
  } catch (const YAML::Exception& e) {
    throw ConfigError(origin + ": invalid value: " + e.msg);
  }
  return value;
}

}  // namespace

void ConfigNode::set(std::string_view dotted_path, std::string_view yaml_value, std::string origin) {
  if (origin.empty()) origin = "--set " + std::string(dotted_path) + "=" + std::string(yaml_value);
  std::vector<PathStep> steps = parse_set_path(dotted_path, origin);
  std::string path = canonical_path(steps);
  YAML::Node value = load_value(yaml_value, origin);
  require_unique_keys(value, path, false, [&](const YAML::Mark&) { return origin; });
  auto fail = [&](const std::string& what) { throw ConfigError(origin + ": " + what); };
  // yaml-cpp's operator[] returns handles that alias the tree, so walking with copies edits in place.
  YAML::Node cursor = node_;
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
        break;
      }
      YAML::Node element = next[step.index];
      if (!element.IsMap() && !element.IsNull()) {
        fail("element " + std::to_string(step.index) + " of '" + step.key + "' is not a mapping");
      }
      cursor.reset(element);
      continue;
    }
    if (last) {
      cursor[step.key] = value;
      break;
    }
    cursor.reset(next);
  }
  ConfigTree::Override applied{path, std::string(yaml_value), std::move(origin), {}};
  collect_leaves(value, path, applied.leaves);
  tree_->overrides.push_back(std::move(applied));
}

void ConfigNode::inline_document(std::string_view dotted_path, const ConfigNode& document,
                                 std::string origin) {
  set(dotted_path, YAML::Dump(document.node_), std::move(origin));
  tree_->overrides.back().leaves.clear();
}

std::vector<OverrideUse> ConfigNode::override_uses() const {
  const std::vector<ConfigTree::Override>& applied = tree_->overrides;
  std::vector<OverrideUse> uses;
  for (auto given = applied.begin(); given != applied.end(); ++given) {
    OverrideUse use{given->origin, {}};
    for (const std::string& leaf : given->leaves) {
      auto later = std::find_if(applied.rbegin(), std::make_reverse_iterator(given + 1),
                                [&](const ConfigTree::Override& o) { return within(leaf, o.path); });
      if (later != std::make_reverse_iterator(given + 1)) {
        use.leaves.push_back({leaf, OverrideUse::State::kReplaced, later->origin});
      } else {
        bool read = tree_->read.contains(leaf);
        use.leaves.push_back({leaf, read ? OverrideUse::State::kRead : OverrideUse::State::kUnread, ""});
      }
    }
    uses.push_back(std::move(use));
  }
  return uses;
}

std::string ConfigNode::child_path(std::string_view key) const {
  return join_key(path_, std::string(key));
}

std::string ConfigNode::where() const {
  const std::vector<ConfigTree::Override>& applied = tree_->overrides;
  auto latest = [&](auto covers) { return std::find_if(applied.rbegin(), applied.rend(), covers); };
  auto given = latest([&](const ConfigTree::Override& o) { return !path_.empty() && within(path_, o.path); });
  if (given == applied.rend() && node_.Mark().is_null()) {
    given = latest([&](const ConfigTree::Override& o) { return !path_.empty() && within(o.path, path_); });
  }
  if (given != applied.rend()) return given->origin + (path_ == given->path ? "" : ": " + path_);
  return format_location(tree_->file, node_.Mark()) + (path_.empty() ? "" : ": " + path_);
}

void ConfigNode::fail(std::string_view what) const {
  throw ConfigError(where() + ": " + std::string(what));
}

std::string ConfigNode::directory() const {
  return std::filesystem::path(tree_->file).parent_path().string();
}

void ConfigNode::record_reads(std::shared_ptr<DocumentReads> reads) const {
  tree_->reads = std::move(reads);
}

void ConfigNode::schema_definition(std::string_view name) const {
  if (reads()) reads()->definition(path_, std::string(name));
}

DocumentReads* ConfigNode::reads() const {
  return tree_->reads.get();
}

bool ConfigNode::contains(std::string_view key) const {
  return node_.IsMap() && node_[std::string(key)].IsDefined() && !node_[std::string(key)].IsNull();
}

bool ConfigNode::has(std::string_view key) const {
  if (reads() && node_.IsMap()) {
    reads()->queried(path_, std::string(key));
    const YAML::Node value = node_[std::string(key)];
    if (value.IsDefined() && value.IsNull()) reads()->null_value(path_, std::string(key), child_path(key));
  }
  return contains(key);
}

ConfigNode ConfigNode::located_child(std::string path, const YAML::Node& node) const {
  tree_->read.insert(path);
  return ConfigNode(node, tree_, std::move(path));
}

ConfigNode ConfigNode::child(std::string_view key) const {
  if (!node_.IsMap()) fail("expected a mapping");
  if (!contains(key)) fail("missing required key '" + std::string(key) + "'");
  std::string path = child_path(key);
  if (reads()) reads()->child(path_, std::string(key), path);
  return located_child(std::move(path), node_[std::string(key)]);
}

std::optional<ConfigNode> ConfigNode::optional_child(std::string_view key) const {
  if (!has(key)) return std::nullopt;
  return child(key);
}

std::vector<ConfigNode> ConfigNode::elements() const {
  if (!node_.IsSequence()) fail("expected a list");
  std::vector<ConfigNode> out;
  if (reads()) reads()->sequence(path_);
  for (size_t i = 0; i < node_.size(); ++i) {
    std::string path = join_index(path_, i);
    if (reads()) reads()->element(path_, path);
    out.push_back(located_child(std::move(path), node_[i]));
  }
  return out;
}

std::vector<std::string> ConfigNode::keys() const {
  if (!node_.IsMap()) fail("expected a mapping");
  if (reads()) reads()->listed_keys(path_);
  std::vector<std::string> out;
  for (const auto& entry : node_) out.push_back(entry.first.Scalar());
  return out;
}

namespace {

ScalarRead scalar_read(ScalarRead::Kind kind) {
  ScalarRead read;
  read.kind = kind;
  return read;
}

// "a, b or c"
std::string listed(const std::vector<std::string>& values) {
  std::string out;
  for (size_t i = 0; i < values.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == values.size() ? " or " : ", ") + values[i];
  }
  return out;
}

}  // namespace

std::string ConfigNode::text() const {
  if (!node_.IsScalar()) fail("expected a single value");
  return node_.Scalar();
}

std::string ConfigNode::as_string() const {
  if (reads()) reads()->scalar(path_, scalar_read(ScalarRead::Kind::kText));
  return text();
}

std::string ConfigNode::as_choice(const std::vector<std::string>& values) const {
  if (reads()) {
    ScalarRead read = scalar_read(ScalarRead::Kind::kChoice);
    read.choices = values;
    reads()->scalar(path_, std::move(read));
  }
  std::string value = text();
  if (std::find(values.begin(), values.end(), value) != values.end()) return value;
  std::string message = "expected " + listed(values) + ", got '" + value + "'";
  std::string suggestion = closest_match(value, values);
  if (!suggestion.empty()) message += " (did you mean '" + suggestion + "'?)";
  fail(message);
}

double ConfigNode::as_number() const {
  if (reads()) reads()->scalar(path_, scalar_read(ScalarRead::Kind::kNumber));
  std::string text = this->text();
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) {
    fail("expected a number, got '" + text + "'");
  }
  return value;
}

std::optional<uint64_t> parse_uint64(std::string_view text) {
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

uint64_t ConfigNode::as_unsigned() const {
  if (reads()) reads()->scalar(path_, scalar_read(ScalarRead::Kind::kUnsigned));
  std::string text = this->text();
  std::optional<uint64_t> value = parse_uint64(text);
  if (!value) fail("expected an integer from 0 to 18446744073709551615, got '" + text + "'");
  return *value;
}

int64_t ConfigNode::as_integer() const {
  if (reads()) reads()->scalar(path_, scalar_read(ScalarRead::Kind::kInteger));
  return parsed_integer();
}

int64_t ConfigNode::parsed_integer() const {
  std::string text = this->text();
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc::result_out_of_range) fail("expected an integer from -9223372036854775808 to 9223372036854775807, got '" + text + "'");
  if (ec != std::errc() || end != text.data() + text.size()) fail("expected an integer, got '" + text + "'");
  return value;
}

int64_t ConfigNode::as_token_count() const {
  if (reads()) reads()->scalar(path_, scalar_read(ScalarRead::Kind::kTokenCount));
  std::string text = this->text();
  if (!has_count_suffix(text)) return parsed_integer();
  std::string error;
  std::optional<int64_t> count = read_token_count(text, error);
  if (!count) fail(error);
  return *count;
}

double ConfigNode::as_quantity(UnitKind kind) const {
  if (reads()) {
    ScalarRead read = scalar_read(ScalarRead::Kind::kQuantity);
    read.unit = kind;
    reads()->scalar(path_, std::move(read));
  }
  try {
    return parse_quantity(text(), kind);
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
int64_t ConfigNode::token_count(std::string_view key) const {
  return child(key).as_token_count();
}
int64_t ConfigNode::token_count(std::string_view key, int64_t fallback) const {
  return has(key) ? token_count(key) : fallback;
}
uint64_t ConfigNode::unsigned_integer(std::string_view key, uint64_t fallback) const {
  return has(key) ? child(key).as_unsigned() : fallback;
}
bool ConfigNode::boolean(std::string_view key, bool fallback) const {
  if (!has(key)) return fallback;
  ConfigNode c = child(key);
  if (reads()) reads()->scalar(c.path_, scalar_read(ScalarRead::Kind::kBoolean));
  std::string text = c.text();
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
std::string ConfigNode::choice(std::string_view key, const std::vector<std::string>& values) const {
  return child(key).as_choice(values);
}
std::string ConfigNode::choice(std::string_view key, const std::vector<std::string>& values,
                               std::string_view fallback) const {
  return has(key) ? choice(key, values) : std::string(fallback);
}

void ConfigNode::allow_keys(std::initializer_list<std::string_view> known) const {
  allow_keys(std::vector<std::string>(known.begin(), known.end()));
}

void ConfigNode::allow_keys(const std::vector<std::string>& known) const {
  if (!node_.IsMap()) fail("expected a mapping");
  if (reads()) reads()->allowed(path_, known);
  for (const auto& entry : node_) {
    const std::string& key = entry.first.Scalar();
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    std::string message = "unknown key '" + key + "'";
    std::string suggestion = closest_match(key, known);
    if (!suggestion.empty()) message += " (did you mean '" + suggestion + "'?)";
    ConfigNode(entry.first, tree_, child_path(key)).fail(message);
  }
}

}  // namespace kvtier
