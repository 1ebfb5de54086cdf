#include "sim/engine/file_schemas.h"

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <functional>

#include "sim/cache/tier_spec.h"
#include "sim/core/checked_file.h"
#include "sim/core/config_files.h"
#include "sim/core/config_schema.h"
#include "sim/core/hardware.h"
#include "sim/core/kv_layout.h"
#include "sim/core/model_card.h"
#include "sim/engine/scenario.h"
#include "sim/engine/workload.h"
#include "sim/workload/agent_workload.h"

namespace kvtier {
namespace {

constexpr const char* kCoverage = "configs/schema/coverage/";

// One kind of file: where load_config() finds its built-in files, and its reader, run on one of them by
// name as kvtier runs it.
struct Kind {
  std::string name;
  std::string folder;
  std::string title;
  std::function<void(const std::string&)> read;
};

void read_tier_file(const std::string& name) {
  // A tier file's layouts need a model; its tiers a block size, an LMCache file's own.
  ModelCard model = parse_model_card(load_config("llama-3.1-8b", "models"));
  TierFile file = load_tier_file(name);
  parse_tier_file(file, model, file.block_tokens.value_or(kDefaultBlockTokens));
}

void read_scenario(const std::string& name) {
  ConfigNode root = load_config(name, "configs/scenarios");
  Scenario s = parse_scenario(root);
  parse_variants(root);
  validate_workload(s);
}

std::vector<Kind> kinds() {
  return {
      {"model", "models", "kvtier model card",
       [](const std::string& name) { parse_model_card(load_config(name, "models")); }},
      {"hardware", "configs/hardware", "kvtier hardware file",
       [](const std::string& name) { parse_hardware(load_config(name, "configs/hardware")); }},
      {"scenario", "configs/scenarios", "kvtier scenario", read_scenario},
      {"workload", "configs/workloads", "kvtier agent workload (a scenario's workload.agent)",
       [](const std::string& name) { parse_agent_workload(load_config(name, "configs/workloads")); }},
      {"tiers", "configs/tiers", "kvtier tier file (kvtier hitrate --tiers)", read_tier_file},
      // No precision-map file is built in; the coverage documents are the only ones.
      {"kv", "configs/kv", "kvtier KV precision map file (--kv FILE)",
       [](const std::string& name) { parse_kv_file(load_config(name, "configs/kv")); }},
  };
}

// A folder of its own under the system's temporary folder, removed with it.
class TemporaryFolder {
 public:
  TemporaryFolder() {
    std::string pattern = (std::filesystem::temp_directory_path() / "kvtier-schema-XXXXXX").string();
    if (!mkdtemp(pattern.data())) throw ConfigError("cannot create a temporary folder in " + pattern);
    path_ = pattern;
  }
  ~TemporaryFolder() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TemporaryFolder(const TemporaryFolder&) = delete;
  TemporaryFolder& operator=(const TemporaryFolder&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace

std::vector<std::string> file_schema_kinds() {
  std::vector<std::string> names;
  for (const Kind& kind : kinds()) names.push_back(kind.name);
  return names;
}

std::vector<FileSchema> file_schemas() {
  std::vector<Kind> all = kinds();
  ConfigSchemaRecorder recorder;
  // A scenario's calibration names a file on disk, which a built-in document cannot: the scenarios read an
  // empty calibration in its place (every key of one is optional), as if they named it.
  TemporaryFolder temporary;
  const std::string calibration = (temporary.path() / "calibration.json").string();
  write_checked_file(calibration, R"({"hardware": {}})");
  std::vector<SchemaFolder> folders;
  for (const Kind& kind : all) {
    SchemaFolder folder{kind.folder, kCoverage + kind.name, kind.name, nullptr};
    if (kind.name == "scenario") {
      folder.prepare = [calibration](ConfigNode& root) {
        if (root.has("calibration")) root.set("calibration", calibration, "an empty calibration");
      };
    }
    folders.push_back(std::move(folder));
  }
  std::vector<FileSchema> schemas;
  {
    SchemaRecordingScope scope(recorder, folders);
    for (const Kind& kind : all) {
      FileSchema schema{kind.name, {}, {}, {}};
      std::vector<std::string> own = embedded_names(kind.folder);
      for (const std::string& name : own) {
        schema.documents.push_back(kind.folder + "/" + name);
        kind.read(name);
      }
      for (const std::string& name : embedded_names(kCoverage + kind.name)) {
        if (std::find(own.begin(), own.end(), name) != own.end()) {
          throw ConfigError(kCoverage + kind.name + "/" + name +
                            ".yaml: has the name of a built-in file of " + kind.folder +
                            ", which load_config() finds first");
        }
        schema.documents.push_back(kCoverage + kind.name + "/" + name);
        kind.read(name);
      }
      schemas.push_back(std::move(schema));
    }
  }
  for (size_t i = 0; i < all.size(); ++i) {
    const std::string comment = "Generated by `kvtier schema " + all[i].name +
                                "` from kvtier's reader of these files, run over its built-in ones and " +
                                kCoverage + all[i].name +
                                "; regenerate every schema with `kvtier schema --out configs/schema` "
                                "instead of editing this file.";
    schemas[i].schema = recorder.schema(all[i].name, all[i].title, comment);
    schemas[i].unread_keys = recorder.unread_keys(all[i].name);
  }
  return schemas;
}

}  // namespace kvtier
