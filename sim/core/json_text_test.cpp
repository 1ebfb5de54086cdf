// The JSON reader every JSON file goes through: errors located by hand-counted line and column.
#include "sim/core/json_text.h"

#include <gtest/gtest.h>

#include "sim/core/config.h"

namespace kvtier {
namespace {

std::string error_of(const std::string& text) {
  try {
    parse_json_text(text, "f.json");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(JsonText, SyntaxErrorsAndHugeNumbersAreLocated) {
  EXPECT_EQ(parse_json_text(R"({"a": [1, 2]})", "f.json")["a"][1], 2);
  // Line 2 is `  "b": }`: the parser stops at the brace, column 8.
  EXPECT_EQ(error_of("{\"a\": 1,\n  \"b\": }").rfind("f.json:2:8: invalid JSON: syntax error", 0), 0u);
  // `{"x": 0, "y": ` is 14 characters: the number starts at column 15 of line 1.
  EXPECT_EQ(error_of(R"({"x": 0, "y": 2e400})"), "f.json:1:15: invalid JSON: number overflow parsing '2e400'");
  EXPECT_EQ(line_column("ab\ncd", 4), "2:2");
  EXPECT_EQ(line_column("ab\ncd", 0), "1:1");
}

TEST(JsonText, TheCallbacksOwnErrorPassesThrough) {
  auto refuse = [](int, nlohmann::json::parse_event_t event, nlohmann::json&) {
    if (event == nlohmann::json::parse_event_t::key) throw ConfigError("no keys here");
    return true;
  };
  try {
    parse_json_text(R"({"a": 1})", "f.json", refuse);
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "no keys here");
  }
}

}  // namespace
}  // namespace kvtier
