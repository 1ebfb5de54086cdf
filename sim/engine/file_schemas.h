// The JSON Schemas of the YAML files kvtier reads (`kvtier schema`, configs/schema/*.schema.json), each
// recorded from the reader of its kind (sim/core/config_schema.h) while that reader reads the built-in
// files of the kind and the coverage documents of configs/schema/coverage/<kind>/, which read the keys the
// built-in files leave out. A reader's new key is in the schema once a document reads it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kvtier {

struct FileSchema {
  std::string kind;  // what `kvtier schema` takes, and the file's stem: "scenario" (scenario.schema.json)
  nlohmann::ordered_json schema;
  std::vector<std::string> unread_keys;  // where the schema knows nothing (ConfigSchemaRecorder::unread_keys)
  std::vector<std::string> documents;    // the files read: "configs/scenarios/h200-llama8b"
};

// model, hardware, scenario, workload, tiers, kv.
std::vector<std::string> file_schema_kinds();

// Every kind's schema, in file_schema_kinds()'s order. Throws ConfigError when a built-in file does not
// read (a test's business before it is this function's).
std::vector<FileSchema> file_schemas();

}  // namespace kvtier
