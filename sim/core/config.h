// Typed, located access to YAML configuration.
//
// A ConfigNode is a YAML node that remembers the file it came from and its key path, so that every
// error reads `file:line:column: key.path: what was expected`. Readers ask for values through typed
// accessors (number, integer, bytes, bandwidth, ...) that throw ConfigError; they call allow_keys()
// to reject keys they do not know, with the closest known key suggested. Errors are wrapped here
// once, not at every call site, and nothing in the library exits: main() turns ConfigError into exit 2.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "units.h"

namespace kvtier {

class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class ConfigNode {
 public:
  // REQUIRES: the file exists and is valid YAML; otherwise throws ConfigError with its location.
  static ConfigNode load_file(const std::string& path);
  static ConfigNode load_string(const std::string& text, const std::string& name);

  // A deep copy: set() on the copy leaves this tree alone.
  ConfigNode clone() const { return ConfigNode(YAML::Clone(node_), file_, path_); }

  // Sets `dotted.key.path` (list elements as `key[i]`) to a YAML scalar or flow value (the CLI's
  // --set key=value), creating maps on the way.
  void set(std::string_view dotted_path, std::string_view yaml_value);

  bool has(std::string_view key) const;
  ConfigNode child(std::string_view key) const;  // throws when missing
  std::optional<ConfigNode> optional_child(std::string_view key) const;
  std::vector<ConfigNode> elements() const;  // REQUIRES: a sequence
  std::vector<std::string> keys() const;     // REQUIRES: a map

  bool is_map() const { return node_.IsMap(); }
  bool is_sequence() const { return node_.IsSequence(); }
  bool is_scalar() const { return node_.IsScalar(); }

  // This node as a value.
  std::string as_string() const;
  double as_number() const;
  int64_t as_integer() const;
  double as_quantity(UnitKind kind) const;

  // A child as a value; the overloads with a default return it when the key is absent.
  std::string string(std::string_view key) const;
  std::string string(std::string_view key, std::string_view fallback) const;
  double number(std::string_view key) const;
  double number(std::string_view key, double fallback) const;
  int64_t integer(std::string_view key) const;
  int64_t integer(std::string_view key, int64_t fallback) const;
  bool boolean(std::string_view key, bool fallback) const;
  double quantity(std::string_view key, UnitKind kind) const;
  double quantity(std::string_view key, UnitKind kind, double fallback) const;

  // Throws for the first key not in `known`, suggesting the closest known one.
  void allow_keys(std::initializer_list<std::string_view> known) const;
  void allow_keys(const std::vector<std::string>& known) const;

  // Throws ConfigError located at this node: "file:line:col: path: what".
  [[noreturn]] void fail(std::string_view what) const;

  const std::string& path() const { return path_; }
  const std::string& file() const { return *file_; }
  // The directory of the file, for resolving relative paths inside it.
  std::string directory() const;

 private:
  ConfigNode(YAML::Node node, std::shared_ptr<const std::string> file, std::string path);
  std::string child_path(std::string_view key) const;
  std::string location() const;

  YAML::Node node_;
  std::shared_ptr<const std::string> file_;
  std::string path_;
};

// The candidate closest to `word` by edit distance, or "" when none is close.
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace kvtier
