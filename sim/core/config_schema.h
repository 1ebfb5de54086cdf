// JSON Schemas of kvtier's YAML files, recorded from the readers that parse them, so that a schema cannot
// drift from its reader.
//
// A ConfigSchemaRecorder watches documents while their readers run (ConfigNode records into it): which keys
// allow_keys() lets a mapping have, which keys a reader asks for without a fallback (required) or with one
// (optional: a fallback, has(), optional_child()), which mappings take any key (keys()), which values are
// lists (elements()), and what each value is read as: text, a number, an integer, a boolean, a quantity of
// a UnitKind (a string with a unit, quantity_pattern()) or one of a fixed set (choice()). schema() merges
// what the documents of one kind showed into one JSON Schema (draft-07):
//   - a value read as a mapping in one document and as a scalar in another may be either (anyOf);
//   - mappings whose readers allowed different key sets (attention: gqa or mla; a distribution's keys by
//     its dist) are alternatives, each closed to its keys; the schema does not tie the discriminating
//     value (kind: mla) to its alternative;
//   - a key is required where every document that had it was read without a fallback, and every one had it;
//   - text is any scalar (kvtier reads `name: 1` as "1"), a quantity a string with one of its units;
//   - a key given null, which has() reads as absent, may be null; a value a reader takes without checking
//     it may be anything ({});
//   - a node whose reader names a definition (ConfigNode::schema_definition: every distribution, tier, KV
//     precision map) is a $ref to it, and the definition merges every node of that name in every recorded
//     document, of every kind: one reader, one schema, wherever it reads.
// A key no document gives is unknown: it gets {}, and unread_keys() names it, so that a test can require
// documents that read every key (configs/schema/coverage).
//
// SchemaRecordingScope makes load_config() record the documents it loads, each as the kind of its folder,
// so that a reader that loads its own files (a tier file, a scenario's model card) is recorded as it runs.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sim/core/config.h"
#include "sim/core/units.h"

namespace kvtier {

// What a reader asked one scalar to be.
struct ScalarRead {
  enum class Kind { kText, kNumber, kInteger, kUnsigned, kBoolean, kQuantity, kChoice, kTokenCount };
  Kind kind = Kind::kText;
  UnitKind unit = UnitKind::kBytes;  // kQuantity
  std::vector<std::string> choices;  // kChoice
};

// What the readers asked of one document, node by node (keyed by key path, config.cpp records into it).
class DocumentReads {
 public:
  struct Node {
    bool map = false;  // a key was read, or its keys listed or checked
    bool sequence = false;
    std::optional<std::vector<std::string>> allowed;      // allow_keys(); twice: the keys both allow
    bool any_key = false;                                 // keys(): the reader takes every key it finds
    std::set<std::string> optional;                       // keys asked for with has(): absence is handled
    std::vector<std::pair<std::string, Node*>> children;  // child(), in first-read order
    std::vector<Node*> elements;
    std::optional<ScalarRead> scalar;  // read twice: what both reads accept
    bool null = false;                 // a key given null, which has() reads as absent
    std::string definition;            // schema_definition()
  };

  void child(const std::string& parent, const std::string& key, const std::string& path);
  void null_value(const std::string& parent, const std::string& key, const std::string& path);
  void sequence(const std::string& path);
  void element(const std::string& parent, const std::string& path);
  void queried(const std::string& path, const std::string& key);
  void listed_keys(const std::string& path);
  void allowed(const std::string& path, const std::vector<std::string>& keys);
  void scalar(const std::string& path, ScalarRead read);
  void definition(const std::string& path, const std::string& name);

  const Node* root() const;  // null when nothing was read
  // Every node that named `definition`.
  void collect(const std::string& definition, std::vector<const Node*>& out) const;

 private:
  Node& node(const std::string& path);
  std::map<std::string, std::unique_ptr<Node>> nodes_;
};

class ConfigSchemaRecorder {
 public:
  // Records what readers ask of `root`'s document from now on, as a document of `kind` (REQUIRES: a
  // document's root; a clone of it is another document, not recorded).
  void record(const ConfigNode& root, const std::string& kind);

  // The schema of the documents of `kind`, with `title` and `comment` ($comment) at its top.
  nlohmann::ordered_json schema(const std::string& kind, const std::string& title,
                                const std::string& comment) const;
  // Key paths ("cache.tiers[].capacity_tokens", "<distribution>.min" in a definition) of `kind`'s schema
  // that some reader allows but no recorded document gives, and lists no document gives an element of:
  // where schema() knows nothing.
  std::vector<std::string> unread_keys(const std::string& kind) const;
  size_t documents(const std::string& kind) const;

 private:
  nlohmann::ordered_json build(const std::string& kind, std::vector<std::string>& unread) const;

  std::vector<std::pair<std::string, std::shared_ptr<DocumentReads>>> documents_;  // kind, reads
};

// A folder of built-in files that a SchemaRecordingScope records as documents of `kind`.
struct SchemaFolder {
  std::string folder;           // as load_config() is given it: "configs/scenarios"
  std::string coverage_folder;  // "configs/schema/coverage/scenario": found by name as well
  std::string kind;             // "scenario"
  // When set, may change a document before its recording starts.
  std::function<void(ConfigNode&)> prepare;
};

// While one lives, load_config() on this thread records every document it loads from one of the folders
// into `recorder`, as the folder's kind, and finds the built-in files of the folder's coverage folder by
// name as well (documents that read the keys the folder's own files leave out).
class SchemaRecordingScope {
 public:
  SchemaRecordingScope(ConfigSchemaRecorder& recorder, std::vector<SchemaFolder> folders);
  ~SchemaRecordingScope();
  SchemaRecordingScope(const SchemaRecordingScope&) = delete;
  SchemaRecordingScope& operator=(const SchemaRecordingScope&) = delete;

  // The scope and folder recording `folder` on this thread, or nulls.
  static std::pair<ConfigSchemaRecorder*, const SchemaFolder*> recording(const std::string& folder);

 private:
  ConfigSchemaRecorder& recorder_;
  std::vector<SchemaFolder> folders_;
  const SchemaRecordingScope* outer_;
};

}  // namespace kvtier
