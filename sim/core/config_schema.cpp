#include "sim/core/config_schema.h"

#include <algorithm>
#include <limits>

namespace kvtier {
namespace {

using Json = nlohmann::ordered_json;
using Node = DocumentReads::Node;

bool numeric(ScalarRead::Kind kind) {
  return kind == ScalarRead::Kind::kNumber || kind == ScalarRead::Kind::kInteger ||
         kind == ScalarRead::Kind::kUnsigned;
}

// Numbers take integers, integers unsigned ones.
int width(ScalarRead::Kind kind) {
  return kind == ScalarRead::Kind::kNumber ? 2 : kind == ScalarRead::Kind::kInteger ? 1 : 0;
}

// One value read twice must pass both reads: the narrower one.
void narrow(ScalarRead& read, const ScalarRead& again) {
  if (read.kind == ScalarRead::Kind::kText) {
    read = again;
  } else if (numeric(read.kind) && numeric(again.kind)) {
    if (width(again.kind) < width(read.kind)) read.kind = again.kind;
  } else if (read.kind == ScalarRead::Kind::kChoice && again.kind == ScalarRead::Kind::kChoice) {
    std::erase_if(read.choices, [&](const std::string& value) {
      return std::find(again.choices.begin(), again.choices.end(), value) == again.choices.end();
    });
  }
}

// Values read in different documents (or list elements) may be either: the wider read, or both.
void widen(std::vector<ScalarRead>& reads, const ScalarRead& read) {
  auto text = [](const ScalarRead& r) { return r.kind == ScalarRead::Kind::kText; };
  if (text(read) || std::any_of(reads.begin(), reads.end(), text)) {
    reads = {read};
    reads[0].kind = ScalarRead::Kind::kText;
    return;
  }
  for (ScalarRead& r : reads) {
    if (numeric(r.kind) && numeric(read.kind)) {
      if (width(read.kind) > width(r.kind)) r.kind = read.kind;
      return;
    }
    if (r.kind == ScalarRead::Kind::kChoice && read.kind == ScalarRead::Kind::kChoice) {
      for (const std::string& value : read.choices) {
        if (std::find(r.choices.begin(), r.choices.end(), value) == r.choices.end())
          r.choices.push_back(value);
      }
      return;
    }
    if (r.kind == read.kind && (r.kind != ScalarRead::Kind::kQuantity || r.unit == read.unit)) return;
  }
  reads.push_back(read);
}

Json scalar_schema(const ScalarRead& read) {
  switch (read.kind) {
    case ScalarRead::Kind::kText:
      return {{"type", {"string", "number", "boolean"}}};
    case ScalarRead::Kind::kNumber:
      return {{"type", "number"}};
    case ScalarRead::Kind::kInteger:
      return {{"type", "integer"}};
    case ScalarRead::Kind::kUnsigned:
      return {{"type", "integer"}, {"minimum", 0}, {"maximum", std::numeric_limits<uint64_t>::max()}};
    case ScalarRead::Kind::kBoolean:
      return {{"type", "boolean"}};
    case ScalarRead::Kind::kQuantity:
      return {{"type", "string"}, {"pattern", quantity_pattern(read.unit)}};
    case ScalarRead::Kind::kChoice:
      return {{"enum", read.choices}};
    case ScalarRead::Kind::kTokenCount:
      return {{"anyOf",
               Json::array({{{"type", "integer"}}, {{"type", "string"}, {"pattern", "^[0-9]+[kKM]$"}}})}};
  }
  return Json::object();
}

std::string join_key(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

// The children that `nodes` read at `key`.
std::vector<const Node*> children_at(const std::vector<const Node*>& nodes, const std::string& key) {
  std::vector<const Node*> out;
  for (const Node* n : nodes) {
    for (const auto& [name, child] : n->children) {
      if (name == key) out.push_back(child);
    }
  }
  return out;
}

// Required: every mapping that had the key had it read without a fallback, and every one had it.
bool required(const std::vector<const Node*>& nodes, const std::string& key) {
  return std::all_of(nodes.begin(), nodes.end(), [&](const Node* n) {
    bool read =
        std::any_of(n->children.begin(), n->children.end(), [&](const auto& c) { return c.first == key; });
    return read && !n->optional.contains(key);
  });
}

// Merges what `nodes`, the values at one place of the schema in every document, were read as; a node that
// names a definition becomes a $ref to it, which definitions() then builds from every node of that name.
class Builder {
 public:
  Builder(const std::vector<const DocumentReads*>& everything, std::vector<std::string>& unread)
      : everything_(everything), unread_(unread) {}

  Json build(const std::vector<const Node*>& nodes, const std::string& path,
             const std::string& inline_definition = "") {
    std::vector<std::string> refs;
    std::vector<const Node*> rest;
    for (const Node* n : nodes) {
      if (n->definition.empty() || n->definition == inline_definition) {
        rest.push_back(n);
      } else if (std::find(refs.begin(), refs.end(), n->definition) == refs.end()) {
        refs.push_back(n->definition);
      }
    }
    Json alternatives = Json::array();
    for (const std::string& ref : refs) {
      used_.insert(ref);
      alternatives.push_back({{"$ref", "#/definitions/" + ref}});
    }
    if (!rest.empty()) {
      Json here = build_here(rest, path);
      if (here.empty()) return here;  // anything
      if (here.contains("anyOf") && here.size() == 1) {
        for (const Json& alternative : here["anyOf"]) alternatives.push_back(alternative);
      } else {
        alternatives.push_back(here);
      }
    }
    if (alternatives.size() == 1) return alternatives[0];
    return {{"anyOf", alternatives}};
  }

  // The definitions the schemas built so far refer to, and those they refer to.
  Json definitions() {
    std::map<std::string, Json> built;
    for (bool more = true; more;) {
      more = false;
      for (const std::string& name : std::set<std::string>(used_)) {
        if (built.contains(name)) continue;
        std::vector<const Node*> nodes;
        for (const DocumentReads* document : everything_) document->collect(name, nodes);
        built[name] = build(nodes, "<" + name + ">", name);
        more = true;
      }
    }
    Json out = Json::object();
    for (auto& [name, schema] : built) out[name] = std::move(schema);
    return out;
  }

 private:
  Json build_here(const std::vector<const Node*>& nodes, const std::string& path) {
    std::vector<std::vector<const Node*>> closed;  // one per key set that allow_keys() was given
    std::vector<std::set<std::string>> closed_keys;
    std::vector<const Node*> open, lists;
    std::vector<ScalarRead> scalars;
    bool untyped = false, null = false;
    for (const Node* n : nodes) {
      if (n->allowed) {
        std::set<std::string> keys(n->allowed->begin(), n->allowed->end());
        auto group = std::find(closed_keys.begin(), closed_keys.end(), keys);
        if (group == closed_keys.end()) {
          closed_keys.push_back(keys);
          closed.emplace_back();
          group = closed_keys.end() - 1;
        }
        closed[static_cast<size_t>(group - closed_keys.begin())].push_back(n);
      } else if (n->map) {
        open.push_back(n);
      } else if (n->sequence) {
        lists.push_back(n);
      } else if (n->scalar) {
        widen(scalars, *n->scalar);
      } else if (n->null) {
        null = true;
      } else {
        untyped = true;  // taken without being checked: any value does
      }
    }
    if (untyped) return Json::object();
    Json alternatives = Json::array();
    for (const std::vector<const Node*>& group : closed) alternatives.push_back(closed_map(group, path));
    if (!open.empty()) alternatives.push_back(open_map(open, path));
    if (!lists.empty()) alternatives.push_back(list(lists, path));
    for (const ScalarRead& read : scalars) alternatives.push_back(scalar_schema(read));
    if (null) alternatives.push_back({{"type", "null"}});
    if (alternatives.size() == 1) return alternatives[0];
    return {{"anyOf", alternatives}};
  }

  Json unknown(const std::string& path, const std::string& why) {
    unread_.push_back(path);
    return {{"$comment", why + ": no recorded document tells its type"}};
  }

  Json closed_map(const std::vector<const Node*>& nodes, const std::string& path) {
    Json properties = Json::object();
    Json keys_required = Json::array();
    for (const std::string& key : *nodes.front()->allowed) {
      std::vector<const Node*> values = children_at(nodes, key);
      properties[key] = values.empty() ? unknown(join_key(path, key), "allowed, never given")
                                       : build(values, join_key(path, key));
      if (!values.empty() && required(nodes, key)) keys_required.push_back(key);
    }
    Json out = {{"type", "object"}, {"properties", properties}};
    if (!keys_required.empty()) out["required"] = keys_required;
    out["additionalProperties"] = false;
    return out;
  }

  Json open_map(const std::vector<const Node*>& nodes, const std::string& path) {
    bool any_key = std::any_of(nodes.begin(), nodes.end(), [](const Node* n) { return n->any_key; });
    if (any_key) {
      std::vector<const Node*> values;
      for (const Node* n : nodes) {
        for (const auto& entry : n->children) values.push_back(entry.second);
      }
      Json value = values.empty() ? unknown(path + ".*", "any key") : build(values, path + ".*");
      return {{"type", "object"}, {"additionalProperties", value}};
    }
    std::vector<std::string> keys;
    for (const Node* n : nodes) {
      for (const auto& entry : n->children) {
        if (std::find(keys.begin(), keys.end(), entry.first) == keys.end()) keys.push_back(entry.first);
      }
    }
    Json properties = Json::object();
    Json keys_required = Json::array();
    for (const std::string& key : keys) {
      properties[key] = build(children_at(nodes, key), join_key(path, key));
      if (required(nodes, key)) keys_required.push_back(key);
    }
    Json out = {{"type", "object"}, {"properties", properties}};
    if (!keys_required.empty()) out["required"] = keys_required;
    return out;
  }

  Json list(const std::vector<const Node*>& nodes, const std::string& path) {
    std::vector<const Node*> elements;
    for (const Node* n : nodes) elements.insert(elements.end(), n->elements.begin(), n->elements.end());
    Json items = elements.empty() ? unknown(path + "[]", "no element") : build(elements, path + "[]");
    return {{"type", "array"}, {"items", items}};
  }

  const std::vector<const DocumentReads*>& everything_;
  std::vector<std::string>& unread_;
  std::set<std::string> used_;
};

}  // namespace

DocumentReads::Node& DocumentReads::node(const std::string& path) {
  std::unique_ptr<Node>& n = nodes_[path];
  if (!n) n = std::make_unique<Node>();
  return *n;
}

void DocumentReads::child(const std::string& parent, const std::string& key, const std::string& path) {
  Node& p = node(parent);
  p.map = true;
  Node* c = &node(path);
  if (std::none_of(p.children.begin(), p.children.end(), [&](const auto& e) { return e.first == key; })) {
    p.children.emplace_back(key, c);
  }
}

void DocumentReads::null_value(const std::string& parent, const std::string& key, const std::string& path) {
  child(parent, key, path);
  node(path).null = true;
}

void DocumentReads::sequence(const std::string& path) {
  node(path).sequence = true;
}

void DocumentReads::element(const std::string& parent, const std::string& path) {
  Node& p = node(parent);
  Node* e = &node(path);
  if (std::find(p.elements.begin(), p.elements.end(), e) == p.elements.end()) p.elements.push_back(e);
}

void DocumentReads::queried(const std::string& path, const std::string& key) {
  node(path).optional.insert(key);
}

void DocumentReads::listed_keys(const std::string& path) {
  Node& n = node(path);
  n.map = true;
  n.any_key = true;
}

void DocumentReads::allowed(const std::string& path, const std::vector<std::string>& keys) {
  Node& n = node(path);
  n.map = true;
  if (!n.allowed) {
    n.allowed = keys;
    return;
  }
  std::erase_if(*n.allowed, [&](const std::string& key) {
    return std::find(keys.begin(), keys.end(), key) == keys.end();
  });
}

void DocumentReads::scalar(const std::string& path, ScalarRead read) {
  Node& n = node(path);
  if (!n.scalar) {
    n.scalar = std::move(read);
  } else {
    narrow(*n.scalar, read);
  }
}

const DocumentReads::Node* DocumentReads::root() const {
  auto found = nodes_.find("");
  return found == nodes_.end() ? nullptr : found->second.get();
}

void DocumentReads::definition(const std::string& path, const std::string& name) {
  node(path).definition = name;
}

void DocumentReads::collect(const std::string& definition, std::vector<const Node*>& out) const {
  for (const auto& [path, n] : nodes_) {
    if (n->definition == definition) out.push_back(n.get());
  }
}

void ConfigSchemaRecorder::record(const ConfigNode& root, const std::string& kind) {
  auto reads = std::make_shared<DocumentReads>();
  root.record_reads(reads);
  documents_.emplace_back(kind, std::move(reads));
}

size_t ConfigSchemaRecorder::documents(const std::string& kind) const {
  return static_cast<size_t>(
      std::count_if(documents_.begin(), documents_.end(), [&](const auto& d) { return d.first == kind; }));
}

nlohmann::ordered_json ConfigSchemaRecorder::build(const std::string& kind,
                                                   std::vector<std::string>& unread) const {
  std::vector<const DocumentReads*> everything;
  std::vector<const Node*> roots;
  for (const auto& [of_kind, document] : documents_) {
    everything.push_back(document.get());
    const Node* root = document->root();
    if (of_kind == kind && root) roots.push_back(root);
  }
  if (roots.empty()) return Json::object();
  Builder builder(everything, unread);
  Json out = builder.build(roots, "");
  Json definitions = builder.definitions();
  if (!definitions.empty()) out["definitions"] = std::move(definitions);
  return out;
}

nlohmann::ordered_json ConfigSchemaRecorder::schema(const std::string& kind, const std::string& title,
                                                    const std::string& comment) const {
  std::vector<std::string> unread;
  Json out = {
      {"$schema", "http://json-schema.org/draft-07/schema#"}, {"$comment", comment}, {"title", title}};
  Json body = build(kind, unread);
  for (const auto& [key, value] : body.items()) out[key] = value;
  return out;
}

std::vector<std::string> ConfigSchemaRecorder::unread_keys(const std::string& kind) const {
  std::vector<std::string> unread;
  build(kind, unread);
  return unread;
}

namespace {

thread_local const SchemaRecordingScope* current_scope = nullptr;

}  // namespace

SchemaRecordingScope::SchemaRecordingScope(ConfigSchemaRecorder& recorder, std::vector<SchemaFolder> folders)
    : recorder_(recorder), folders_(std::move(folders)), outer_(current_scope) {
  current_scope = this;
}

SchemaRecordingScope::~SchemaRecordingScope() {
  current_scope = outer_;
}

std::pair<ConfigSchemaRecorder*, const SchemaFolder*> SchemaRecordingScope::recording(
    const std::string& folder) {
  for (const SchemaRecordingScope* scope = current_scope; scope; scope = scope->outer_) {
    for (const SchemaFolder& f : scope->folders_) {
      if (f.folder == folder) return {&scope->recorder_, &f};
    }
  }
  return {nullptr, nullptr};
}

}  // namespace kvtier
