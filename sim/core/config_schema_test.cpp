#include "sim/core/config_schema.h"

#include <gtest/gtest.h>

#include "sim/core/config_error_test_support.h"
#include "sim/core/config_files.h"
#include "sim/core/hardware.h"

namespace kvtier {
namespace {

using testing::error_of;
using Json = nlohmann::ordered_json;

// The schema of `documents`, each read by `read`.
Json schema_of(const std::vector<std::string>& documents, const std::function<void(const ConfigNode&)>& read,
               std::vector<std::string>* unread = nullptr) {
  ConfigSchemaRecorder recorder;
  for (const std::string& text : documents) {
    ConfigNode root = ConfigNode::load_string(text, "t.yaml");
    recorder.record(root, "t");
    read(root);
  }
  if (unread) *unread = recorder.unread_keys("t");
  return recorder.schema("t", "t", "c");
}

TEST(ConfigSchema, TypedReadsBecomeTypesAndFallbacksMakeKeysOptional) {
  Json schema =
      schema_of({"n: 1\nx: 0.5\nt: hi\nsize: 2GiB\nflag: true\npick: b\nseed: 7\n"}, [](const ConfigNode& r) {
        r.allow_keys({"n", "x", "t", "size", "flag", "pick", "seed"});
        r.integer("n");
        r.number("x", 1);
        r.string("t", "");
        r.quantity("size", UnitKind::kBytes);
        r.boolean("flag", false);
        r.choice("pick", {"a", "b"}, "a");
        r.unsigned_integer("seed", 1);
      });
  EXPECT_EQ(schema["$schema"], "http://json-schema.org/draft-07/schema#");
  EXPECT_EQ(schema["title"], "t");
  EXPECT_EQ(schema["type"], "object");
  EXPECT_EQ(schema["additionalProperties"], false);
  EXPECT_EQ(schema["required"], Json::parse(R"(["n", "size"])"));
  const Json& p = schema["properties"];
  EXPECT_EQ(p["n"], Json::parse(R"({"type": "integer"})"));
  EXPECT_EQ(p["x"], Json::parse(R"({"type": "number"})"));
  EXPECT_EQ(p["t"], Json::parse(R"({"type": ["string", "number", "boolean"]})"));  // any scalar is text
  EXPECT_EQ(p["size"]["type"], "string");
  EXPECT_EQ(p["size"]["pattern"], quantity_pattern(UnitKind::kBytes));
  EXPECT_EQ(p["flag"], Json::parse(R"({"type": "boolean"})"));
  EXPECT_EQ(p["pick"], Json::parse(R"({"enum": ["a", "b"]})"));
  EXPECT_EQ(p["seed"]["minimum"], 0);
}

TEST(ConfigSchema, AKeyIsRequiredOnlyWhereEveryDocumentReadItWithoutAFallback) {
  auto read = [](const ConfigNode& r) {
    r.allow_keys({"always", "sometimes", "guarded"});
    r.integer("always");
    if (r.integer("always") > 1) r.integer("sometimes");
    if (r.has("guarded")) r.integer("guarded");
  };
  Json schema = schema_of({"always: 2\nsometimes: 1\nguarded: 1\n", "always: 1\nguarded: 1\n"}, read);
  EXPECT_EQ(schema["required"], Json::parse(R"(["always"])"));
}

TEST(ConfigSchema, ListsMapsOfAnyKeyAndScalarOrMapValues) {
  auto read = [](const ConfigNode& r) {
    r.allow_keys({"items", "free", "either"});
    for (const ConfigNode& item : r.child("items").elements()) {
      item.allow_keys({"v"});
      item.number("v");
    }
    ConfigNode free = r.child("free");
    for (const std::string& key : free.keys()) free.child(key).as_string();
    ConfigNode either = r.child("either");
    if (either.is_scalar()) {
      either.as_choice({"x", "y"});
    } else {
      either.allow_keys({"kind"});
      either.choice("kind", {"x", "y"});
    }
  };
  Json schema = schema_of({"items: [{v: 1}, {v: 2.5}]\nfree: {a.b: 1, c: x}\neither: x\n",
                           "items: []\nfree: {}\neither: {kind: y}\n"},
                          read);
  const Json& p = schema["properties"];
  EXPECT_EQ(p["items"], Json::parse(R"({"type": "array", "items": {"type": "object",
      "properties": {"v": {"type": "number"}}, "required": ["v"], "additionalProperties": false}})"));
  EXPECT_EQ(p["free"],
            Json::parse(
                R"({"type": "object", "additionalProperties": {"type": ["string", "number", "boolean"]}})"));
  EXPECT_EQ(p["either"],
            Json::parse(R"({"anyOf": [{"type": "object", "properties": {"kind": {"enum": ["x", "y"]}},
      "required": ["kind"], "additionalProperties": false}, {"enum": ["x", "y"]}]})"));
}

TEST(ConfigSchema, MappingsWithDifferentAllowedKeysAreAlternatives) {
  auto read = [](const ConfigNode& r) {
    std::string kind = r.choice("kind", {"a", "b"});
    r.allow_keys(kind == "a" ? std::vector<std::string>{"kind", "x"} : std::vector<std::string>{"kind", "y"});
    r.integer(kind == "a" ? "x" : "y");
  };
  Json schema = schema_of({"kind: a\nx: 1\n", "kind: b\ny: 1\n", "kind: a\nx: 2\n"}, read);
  ASSERT_EQ(schema["anyOf"].size(), 2u);
  EXPECT_EQ(schema["anyOf"][0]["required"], Json::parse(R"(["kind", "x"])"));
  EXPECT_EQ(schema["anyOf"][1]["required"], Json::parse(R"(["kind", "y"])"));
}

TEST(ConfigSchema, AValueReadTwiceTakesWhatBothReadsAccept) {
  Json schema = schema_of({"kv: int4\nn: 3\n"}, [](const ConfigNode& r) {
    r.allow_keys({"kv", "n"});
    r.child("kv").as_choice({"bf16", "int4"});
    r.string("kv");
    r.number("n");
    r.integer("n");
  });
  EXPECT_EQ(schema["properties"]["kv"], Json::parse(R"({"enum": ["bf16", "int4"]})"));
  EXPECT_EQ(schema["properties"]["n"], Json::parse(R"({"type": "integer"})"));
}

TEST(ConfigSchema, AllowedKeysThatNoDocumentReadsAreNamed) {
  std::vector<std::string> unread;
  Json schema = schema_of(
      {"list: [{a: 1}]\n"},
      [](const ConfigNode& r) {
        r.allow_keys({"list", "later"});
        for (const ConfigNode& item : r.child("list").elements()) {
          item.allow_keys({"a", "b"});
          item.integer("a");
        }
      },
      &unread);
  EXPECT_EQ(unread, (std::vector<std::string>{"list[].b", "later"}));
  EXPECT_EQ(schema["properties"]["later"].count("type"), 0u);  // anything
}

TEST(ConfigSchema, ReadsAreRecordedOnlyOnRecordedDocuments) {
  ConfigSchemaRecorder recorder;
  ConfigNode root = ConfigNode::load_string("a: 1\n", "t.yaml");
  root.integer("a");  // before recording: not seen
  ConfigNode::load_string("b: 1\n", "u.yaml").integer("b");
  recorder.record(root, "t");
  root.clone().integer("a");  // a clone is another document
  EXPECT_EQ(recorder.schema("t", "t", "c").count("properties"), 0u);
}

TEST(ConfigSchema, AScopeRecordsWhatLoadConfigLoadsFromItsFolders) {
  ConfigSchemaRecorder recorder;
  {
    SchemaRecordingScope scope(recorder,
                               {{"configs/hardware", "configs/schema/coverage/hardware", "hw", nullptr}});
    parse_hardware(load_config("h200", "configs/hardware"));
    load_config("llama-3.1-8b", "models");  // another folder
  }
  parse_hardware(load_config("mi300x", "configs/hardware"));  // after the scope
  EXPECT_EQ(recorder.documents("hw"), 1u);
  Json schema = recorder.schema("hw", "t", "c");
  EXPECT_EQ(schema["properties"]["gpu"]["properties"]["hbm_bandwidth"]["pattern"],
            quantity_pattern(UnitKind::kBandwidth));
}

TEST(ConfigSchema, ADefinitionMergesItsReaderEverywhereAndInEveryKind) {
  auto distribution = [](const ConfigNode& node) {
    node.schema_definition("d");
    if (node.is_scalar()) return node.as_number();
    node.allow_keys({"mean", "min"});
    return node.number("mean") + node.number("min", 0);
  };
  ConfigSchemaRecorder recorder;
  ConfigNode a = ConfigNode::load_string("x: 1\ny: {mean: 2}\n", "a.yaml");
  recorder.record(a, "a");
  a.allow_keys({"x", "y"});
  distribution(a.child("x"));
  distribution(a.child("y"));
  ConfigNode b = ConfigNode::load_string("z: {mean: 2, min: 1}\n", "b.yaml");
  recorder.record(b, "b");
  distribution(b.child("z"));
  Json schema = recorder.schema("a", "t", "c");
  EXPECT_EQ(schema["properties"]["x"], Json::parse(R"({"$ref": "#/definitions/d"})"));
  EXPECT_EQ(schema["properties"]["y"], Json::parse(R"({"$ref": "#/definitions/d"})"));
  // What kind b's document read counts for kind a's schema: min is known.
  EXPECT_EQ(schema["definitions"]["d"], Json::parse(R"({"anyOf": [{"type": "object", "properties":
      {"mean": {"type": "number"}, "min": {"type": "number"}}, "required": ["mean"],
      "additionalProperties": false}, {"type": "number"}]})"));
  EXPECT_TRUE(recorder.unread_keys("a").empty());
}

TEST(ConfigSchema, NullIsAbsenceAndAnUncheckedValueIsAnything) {
  Json schema = schema_of({"a: null\nb: {x: [1]}\n"}, [](const ConfigNode& r) {
    r.allow_keys({"a", "b"});
    if (r.has("a")) r.integer("a");
    r.child("b");
  });
  EXPECT_EQ(schema["properties"]["a"], Json::parse(R"({"type": "null"})"));
  EXPECT_EQ(schema["properties"]["b"], Json::object());
}

TEST(ConfigSchema, AChoiceListsItsValuesAndSuggestsTheClosest) {
  ConfigNode root = ConfigNode::load_string("policy: lur\nloop: sideways\n", "t.yaml");
  EXPECT_EQ(error_of([&] {
              root.choice("policy", {"lru", "lfu", "arc", "s3fifo"});
            }),
            "t.yaml:1:9: policy: expected lru, lfu, arc or s3fifo, got 'lur' (did you mean 'lru'?)");
  EXPECT_EQ(error_of([&] {
              root.choice("loop", {"closed", "open"}, "closed");
            }),
            "t.yaml:2:7: loop: expected closed or open, got 'sideways'");
  EXPECT_EQ(root.choice("absent", {"a", "b"}, "b"), "b");
}

}  // namespace
}  // namespace kvtier
