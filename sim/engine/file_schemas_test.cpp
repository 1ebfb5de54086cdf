#include "sim/engine/file_schemas.h"

#include <gtest/gtest.h>

#include <map>

#include "sim/core/units.h"

namespace kvtier {
namespace {

using Json = nlohmann::ordered_json;

const std::map<std::string, FileSchema>& schemas() {
  static const std::map<std::string, FileSchema> all = [] {
    std::map<std::string, FileSchema> by_kind;
    for (FileSchema& schema : file_schemas()) by_kind.emplace(schema.kind, std::move(schema));
    return by_kind;
  }();
  return all;
}

const Json& schema(const std::string& kind) {
  return schemas().at(kind).schema;
}

// A key a reader allows but no document reads has no type in the schema: a new key needs a built-in file
// or a document in configs/schema/coverage/<kind>/ that sets it.
TEST(FileSchemas, EveryKeyAReaderAllowsIsReadByADocument) {
  ASSERT_EQ(schemas().size(), file_schema_kinds().size());
  for (const auto& [kind, schema] : schemas()) {
    std::string unread;
    for (const std::string& key : schema.unread_keys) unread += " " + key;
    EXPECT_TRUE(schema.unread_keys.empty())
        << kind << ": no document reads" << unread << "; add one to configs/schema/coverage/" << kind;
  }
}

TEST(FileSchemas, EveryKindReadsItsBuiltInFilesAndCoverageDocuments) {
  auto read = [](const std::string& kind, const std::string& document) {
    const std::vector<std::string>& documents = schemas().at(kind).documents;
    return std::find(documents.begin(), documents.end(), document) != documents.end();
  };
  EXPECT_TRUE(read("model", "models/llama-3.1-8b"));
  EXPECT_TRUE(read("scenario", "configs/scenarios/h200-llama8b"));
  EXPECT_TRUE(read("scenario", "configs/schema/coverage/scenario/trace-open-loop"));
  EXPECT_TRUE(read("kv", "configs/schema/coverage/kv/preset"));
  for (const auto& [kind, schema] : schemas()) {
    EXPECT_EQ(schema.schema["$schema"], "http://json-schema.org/draft-07/schema#") << kind;
  }
}

TEST(FileSchemas, ModelCardsKeepTheirReadersTypesAndRequiredKeys) {
  const Json& model = schema("model");
  EXPECT_EQ(model["additionalProperties"], false);
  EXPECT_EQ(model["properties"]["layers"]["type"], "integer");
  EXPECT_EQ(model["properties"]["total_params"]["type"], "number");
  EXPECT_EQ(model["properties"]["weight_dtype"]["enum"],
            Json::parse(R"(["bf16", "fp16", "fp8", "fp32", "int4", "fp4"])"));
  const Json& required = model["required"];
  for (const char* key : {"name", "layers", "hidden_size", "query_heads", "attention", "total_params"}) {
    EXPECT_NE(std::find(required.begin(), required.end(), key), required.end()) << key;
  }
  for (const char* key : {"source", "active_params", "weight_dtype", "moe", "vocab_size"}) {
    EXPECT_EQ(std::find(required.begin(), required.end(), key), required.end()) << key;
  }
  // GQA (or MHA) and MLA allow different keys: two alternatives.
  EXPECT_EQ(model["properties"]["attention"]["anyOf"].size(), 2u);
}

TEST(FileSchemas, QuantitiesAreStringsWithTheirUnits) {
  const Json& gpu = schema("hardware")["properties"]["gpu"]["properties"];
  EXPECT_EQ(gpu["hbm_capacity"]["pattern"], quantity_pattern(UnitKind::kBytes));
  EXPECT_EQ(gpu["hbm_bandwidth"]["pattern"], quantity_pattern(UnitKind::kBandwidth));
  EXPECT_EQ(gpu["bf16_dense"]["pattern"], quantity_pattern(UnitKind::kFlopRate));
  EXPECT_EQ(schema("scenario")["properties"]["slo"]["properties"]["ttft"]["pattern"],
            quantity_pattern(UnitKind::kDuration));
}

TEST(FileSchemas, ScenariosNestTiersAgentsAndVariants) {
  const Json& p = schema("scenario")["properties"];
  EXPECT_EQ(p["instance"]["properties"]["transfers"]["enum"], Json::parse(R"(["background", "blocking"])"));
  // A tier: the tiers' one reader, in scenarios, tier files and an LMCache file's kvtier_hbm.
  EXPECT_EQ(p["cache"]["properties"]["tiers"]["items"], Json::parse(R"({"$ref": "#/definitions/tier"})"));
  EXPECT_EQ(schema("tiers")["definitions"]["tier"], schema("scenario")["definitions"]["tier"]);
  const Json& tier = schema("scenario")["definitions"]["tier"];
  EXPECT_EQ(tier["properties"]["medium"]["enum"], Json::parse(R"(["hbm", "dram", "nvme", "remote"])"));
  // policy: a name, or {name, move_to_main_threshold}.
  EXPECT_EQ(tier["properties"]["policy"]["anyOf"].size(), 2u);
  // kv: the precision maps' one reader, wherever it reads: a preset, or a map.
  EXPECT_EQ(tier["properties"]["kv"], Json::parse(R"({"$ref": "#/definitions/kv_precision_map"})"));
  EXPECT_EQ(schema("scenario")["definitions"]["kv_precision_map"]["anyOf"].size(), 2u);
  EXPECT_EQ(schema("kv")["properties"]["kv"], tier["properties"]["kv"]);
  // workload.agent: a built-in or file name (any scalar), or the generator's keys.
  EXPECT_EQ(p["workload"]["properties"]["agent"]["anyOf"].size(), 2u);
  const Json& variant = p["variants"]["items"];
  EXPECT_EQ(variant["required"], Json::parse(R"(["name"])"));
  EXPECT_EQ(variant["properties"]["set"]["additionalProperties"]["type"],
            Json::parse(R"(["string", "number", "boolean"])"));
}

}  // namespace
}  // namespace kvtier
