// Typed, located access to YAML configuration.
//
// A ConfigNode is a YAML node that remembers the file it came from and its key path, so that every
// error reads `file:line:column: key.path: what was expected`. Readers ask for values through typed
// accessors (number, integer, bytes, bandwidth, ...) that throw ConfigError; they call allow_keys()
// to reject keys they do not know, with the closest known key suggested. Errors are wrapped here
// once, not at every call site, and nothing in the library exits: main() turns ConfigError into exit 2.
//
// Configuration is strict: a key given twice in one mapping is an error at the second one. Values put in
// by set() (the CLI's --set, a variant's set:) remember where they were given, so an error in one names
// that instead of a line of the file; and the tree records which key paths its readers asked for, so that
// a caller can reject a set() that nothing reads (override_uses()). A tree can also record what its readers
// ask of it, for the JSON Schemas of kvtier's files (config_schema.h).
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

#include "sim/core/units.h"

namespace kvtier {

class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ConfigTree;  // what every node of one loaded document shares (config.cpp)
class DocumentReads;  // what readers asked of a document, for its schema (config_schema.h)

// What became of one set() on a tree: the key paths of its value's leaves (the path itself for a scalar or
// an empty value; none for a null, which removes a key), each read when a reader asked for it, or replaced
// when a later set() put another value there.
struct OverrideUse {
  enum class State { kRead, kUnread, kReplaced };
  struct Leaf {
    std::string path;
    State state = State::kUnread;
    std::string replaced_by;  // the later set()'s origin, when replaced
  };
  std::string origin;  // as set() was given it
  std::vector<Leaf> leaves;
};

class ConfigNode {
 public:
  // REQUIRES: the file exists and is valid YAML without duplicate keys; otherwise throws ConfigError
  // with its location.
  static ConfigNode load_file(const std::string& path);
  static ConfigNode load_string(const std::string& text, const std::string& name);

  // A deep copy of a whole document (REQUIRES: the root), with the file's line and column marks and
  // the values set() put in so far; set() on the copy leaves this tree alone, and the copy starts with
  // nothing read.
  ConfigNode clone() const;

  // Sets `dotted.key.path` (list elements as `key[i]`) to a YAML scalar or flow value, creating maps on
  // the way. `origin` says where the value was given, and errors in it name that instead of a file
  // position: by default "--set dotted.key.path=yaml_value", the CLI's form.
  void set(std::string_view dotted_path, std::string_view yaml_value, std::string origin = "");
  // Puts a whole other document at `dotted.key.path`, as set() would, for later set()s to reach into (a
  // scenario's hardware file, inlined so that --set hardware.pcie.h2d_bandwidth=... can change it). Errors
  // in its values name `origin`; none of its keys need be read (override_uses() lists it with no leaves).
  void inline_document(std::string_view dotted_path, const ConfigNode& document, std::string origin);
  // Every set() on this tree so far, in order, with which of its leaves a reader asked for.
  std::vector<OverrideUse> override_uses() const;

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
  double as_number() const;  // finite
  int64_t as_integer() const;
  // An integer, or a token or block count with K or M (32K = 32,768, token_count.h).
  int64_t as_token_count() const;
  uint64_t as_unsigned() const;  // 0 to 2^64-1, such as a seed
  double as_quantity(UnitKind kind) const;

  // A child as a value; the overloads with a default return it when the key is absent.
  std::string string(std::string_view key) const;
  std::string string(std::string_view key, std::string_view fallback) const;
  double number(std::string_view key) const;
  double number(std::string_view key, double fallback) const;
  int64_t integer(std::string_view key) const;
  int64_t integer(std::string_view key, int64_t fallback) const;
  int64_t token_count(std::string_view key) const;
  int64_t token_count(std::string_view key, int64_t fallback) const;
  uint64_t unsigned_integer(std::string_view key, uint64_t fallback) const;
  bool boolean(std::string_view key, bool fallback) const;
  double quantity(std::string_view key, UnitKind kind) const;
  double quantity(std::string_view key, UnitKind kind, double fallback) const;
  // A value from a fixed set: an error lists the set and suggests the closest ("expected lru, lfu, arc or
  // s3fifo, got 'lur' (did you mean 'lru'?)"), and the schema lists the set.
  std::string as_choice(const std::vector<std::string>& values) const;
  std::string choice(std::string_view key, const std::vector<std::string>& values) const;
  std::string choice(std::string_view key, const std::vector<std::string>& values,
                     std::string_view fallback) const;

  // Throws for the first key not in `known`, suggesting the closest known one.
  void allow_keys(std::initializer_list<std::string_view> known) const;
  void allow_keys(const std::vector<std::string>& known) const;

  // Where this node is, as errors name it: "file:line:col: key.path"; for a value that set() put in (or a
  // mapping it created on the way), its origin, followed by the key path when the node lies deeper.
  std::string where() const;
  // Throws ConfigError located at this node: "<where()>: what".
  [[noreturn]] void fail(std::string_view what) const;

  const std::string& path() const { return path_; }
  const std::string& file() const;
  // The directory of the file, for resolving relative paths inside it.
  std::string directory() const;

  // From now on, what readers ask of this document goes into `reads` (REQUIRES: the root).
  void record_reads(std::shared_ptr<DocumentReads> reads) const;
  // Names the reader of this node for the schemas: every node of one name, wherever it is, shares one
  // definition (config_schema.h). A reader that parses the same thing in many places calls it first.
  void schema_definition(std::string_view name) const;

 private:
  ConfigNode(YAML::Node node, std::shared_ptr<ConfigTree> tree, std::string path);
  ConfigNode located_child(std::string path, const YAML::Node& node) const;  // records the read
  int64_t parsed_integer() const;  // the value as an integer, not recorded as a read
  std::string child_path(std::string_view key) const;
  bool contains(std::string_view key) const;  // has(), not recorded as a read
  std::string text() const;                   // as_string(), not recorded as a read
  DocumentReads* reads() const;               // null unless recorded

  YAML::Node node_;
  std::shared_ptr<ConfigTree> tree_;
  std::string path_;
};

// `text` as an unsigned 64-bit decimal integer, or nothing when it is not exactly one.
std::optional<uint64_t> parse_uint64(std::string_view text);

// The candidate closest to `word` by edit distance, or "" when none is close.
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace kvtier
