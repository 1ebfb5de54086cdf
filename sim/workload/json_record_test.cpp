#include "sim/workload/json_record.h"

#include <gtest/gtest.h>

namespace kvtier {
namespace {

TEST(JsonRecord, FastScanAndLibraryAgreeOnTraceLines) {
  for (const char* line :
       {R"({"timestamp": 27482, "input_length": 6955, "output_length": 52, "hash_ids": [46, 47, 48]})",
        R"(  {"a": -0.5e3, "b": 18446744073709551615, "c": true, "d": null, "e": "x y", "f": []}  )",
        R"({})"}) {
    JsonRecord fast, library;
    fast.parse(line);
    library.parse_with_library(line);
    EXPECT_EQ(fast.field_names(), library.field_names()) << line;
  }
  JsonRecord r;
  r.parse(
      R"({"a": 2.5e-1, "b": 18446744073709551615, "c": true, "e": "x y", "f": [0, 18446744073709551615]})");
  EXPECT_DOUBLE_EQ(r.number("a"), 0.25);
  EXPECT_THROW(r.integer("a"), TraceLineError);
  EXPECT_DOUBLE_EQ(r.number("b"), 18446744073709551615.0);
  EXPECT_EQ(r.optional_boolean("c"), true);
  EXPECT_EQ(r.optional_string("e"), "x y");
  EXPECT_EQ(r.id_list("f"), (std::vector<uint64_t>{0, 18446744073709551615ULL}));
}

// The fast scan reads an id as it scans its digits; at the edges of what an id may be, it must read what
// the library reads, or refuse what the library refuses.
TEST(JsonRecord, AnIdListReadsAsTheLibraryReadsIt) {
  auto ids = [](const char* line, bool library) -> std::string {
    try {
      JsonRecord r;
      library ? r.parse_with_library(line) : r.parse(line);
      std::string out;
      for (uint64_t id : r.id_list("f")) out += std::to_string(id) + " ";
      return out;
    } catch (const TraceLineError& e) {
      return "refused";
    }
  };
  for (const char* line : {R"({"f": [0]})", R"({"f": [ 7 ,10, 200 ]})", R"({"f": [18446744073709551615]})",
                           R"({"f": [18446744073709551616]})", R"({"f": [99999999999999999999]})",
                           R"({"f": [01]})", R"({"f": [-1]})", R"({"f": [1.5]})", R"({"f": [1e3]})",
                           R"({"f": [10E0]})", R"({"f": [1,]})", R"({"f": [1 2]})"}) {
    EXPECT_EQ(ids(line, false), ids(line, true)) << line;
  }
  EXPECT_EQ(ids(R"({"f": [ 7 ,10, 200 ]})", false), "7 10 200 ");
  EXPECT_EQ(ids(R"({"f": [18446744073709551615]})", false), "18446744073709551615 ");
  EXPECT_EQ(ids(R"({"f": [01]})", false), "refused");
}

TEST(JsonRecord, LinesOutsideThePlainShapeStillParseThroughTheLibrary) {
  JsonRecord r;
  r.parse(R"({"prefix": "agent \"7\"", "n": 1})");  // an escape
  EXPECT_EQ(r.optional_string("prefix"), "agent \"7\"");
  r.parse(R"({"n": 1E2})");
  EXPECT_DOUBLE_EQ(r.number("n"), 100);
}

TEST(JsonRecord, RejectsWhatJsonRejectsWithTheLibrarysWords) {
  JsonRecord r;
  EXPECT_THROW(r.parse(R"({"n": 01})"), TraceLineError);
  EXPECT_THROW(r.parse(R"({"n": 1,})"), TraceLineError);
  EXPECT_THROW(r.parse(R"({"n": nan})"), TraceLineError);
  EXPECT_THROW(r.parse(R"({"n": {"m": 1}})"), TraceLineError);
  EXPECT_THROW(r.parse(R"({"n": [1.5]})"), TraceLineError);
  try {
    r.parse(R"({"n": 1, "n": 2})");
    FAIL();
  } catch (const TraceLineError& e) {
    EXPECT_STREQ(e.what(), "field 'n': duplicate field");
  }
}

}  // namespace
}  // namespace kvtier
