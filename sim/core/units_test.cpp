#include "sim/core/units.h"

#include <gtest/gtest.h>

#include <cmath>
#include <regex>

#include "sim/core/config.h"
#include "sim/core/token_count.h"

namespace kvtier {
namespace {

TEST(Units, DecimalAndBinaryPrefixesDiffer) {
  EXPECT_DOUBLE_EQ(parse_bytes("141GB"), 141e9);
  EXPECT_DOUBLE_EQ(parse_bytes("512GiB"), 512.0 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(parse_bytes("16KiB"), 16384);
  EXPECT_DOUBLE_EQ(parse_bytes("3.84TB"), 3.84e12);
  EXPECT_DOUBLE_EQ(parse_bytes("0B"), 0);
}

TEST(Units, BandwidthNeedsPerSecond) {
  EXPECT_DOUBLE_EQ(parse_bandwidth("4.8TB/s"), 4.8e12);
  EXPECT_DOUBLE_EQ(parse_bandwidth("55GB/s"), 55e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("1.5 GiB/s"), 1.5 * 1024 * 1024 * 1024);
  EXPECT_THROW(parse_bandwidth("55GB"), UnitError);
}

TEST(Units, DurationsAndRates) {
  EXPECT_DOUBLE_EQ(parse_duration("2us"), 2e-6);
  EXPECT_DOUBLE_EQ(parse_duration("1.5ms"), 1.5e-3);
  EXPECT_DOUBLE_EQ(parse_duration("20min"), 1200);
  EXPECT_DOUBLE_EQ(parse_flop_rate("989TFLOPS"), 989e12);
  EXPECT_DOUBLE_EQ(parse_flop_rate("2.5PFLOP/s"), 2.5e15);
  EXPECT_DOUBLE_EQ(parse_quantity("700W", UnitKind::kPower), 700);
  EXPECT_DOUBLE_EQ(parse_quantity("1.5kW", UnitKind::kPower), 1500);
  EXPECT_THROW(parse_quantity("700", UnitKind::kPower), UnitError);
  EXPECT_THROW(parse_quantity("700Wh", UnitKind::kPower), UnitError);
}

TEST(Units, MissingOrWrongUnitIsAnError) {
  try {
    parse_bytes("141");
    FAIL() << "a bare number must not parse as bytes";
  } catch (const UnitError& e) {
    EXPECT_NE(std::string(e.what()).find("a unit is required"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_bytes("141Gb/s"), UnitError);
  EXPECT_THROW(parse_duration("3 fortnights"), UnitError);
  EXPECT_THROW(parse_bytes("GB"), UnitError);
  EXPECT_THROW(parse_bytes("-4GB"), UnitError);
  EXPECT_THROW(parse_bytes("nanGB"), UnitError);
}

// Each of these parsed before: "-0B" as -0 bytes, "1e300PB" as infinity; the others fail as before.
TEST(Units, NonFiniteNegativeAndOutOfRangeNumbersAreErrors) {
  auto message = [](std::string_view text, UnitKind kind) -> std::string {
    try {
      parse_quantity(text, kind);
    } catch (const UnitError& e) {
      return e.what();
    }
    return "parsed";
  };
  EXPECT_EQ(message("-0B", UnitKind::kBytes), "expected a non-negative quantity, got '-0B'");
  EXPECT_EQ(message("-0.0 GB/s", UnitKind::kBandwidth), "expected a non-negative quantity, got '-0.0 GB/s'");
  EXPECT_EQ(message("1e300PB", UnitKind::kBytes), "'1e300PB' is out of range");
  EXPECT_EQ(message("1e400B", UnitKind::kBytes), "the number in '1e400B' is out of range");
  EXPECT_EQ(message("infTB/s", UnitKind::kBandwidth),
            "expected a bandwidth such as 55GB/s or 4.8TB/s, got 'infTB/s'");
  EXPECT_EQ(message("nanGB", UnitKind::kBytes),
            "expected a size such as 512GiB, 141GB or 16KiB, got 'nanGB'");
  EXPECT_EQ(message("NaNs", UnitKind::kDuration),
            "expected a duration such as 2us, 1.5ms or 20min, got 'NaNs'");
  // The largest finite products still parse: 1.7e308 B, and 1e293 PB = 1e308 B.
  EXPECT_DOUBLE_EQ(parse_bytes("1.7e308B"), 1.7e308);
  EXPECT_DOUBLE_EQ(parse_bytes("1e293PB"), 1e308);
  EXPECT_DOUBLE_EQ(parse_bytes("0B"), 0);
  EXPECT_FALSE(std::signbit(parse_bytes("0B")));
}

// The schemas' pattern for a quantity (config_schema.h) accepts what parse_quantity does, short of range.
TEST(Units, QuantityPatternMatchesWhatParsesAndNothingElse) {
  struct Text {
    std::string text;
    UnitKind kind;
  };
  const std::vector<Text> texts = {
      {"141GB", UnitKind::kBytes},        {"512GiB", UnitKind::kBytes},
      {"16 KiB", UnitKind::kBytes},       {".5TB", UnitKind::kBytes},
      {"5.B", UnitKind::kBytes},          {"1e9B", UnitKind::kBytes},
      {"2E+3kB", UnitKind::kBytes},       {"0B", UnitKind::kBytes},
      {"4.8TB/s", UnitKind::kBandwidth},  {"55 GB/s", UnitKind::kBandwidth},
      {"2us", UnitKind::kDuration},       {"1.5ms", UnitKind::kDuration},
      {"20min", UnitKind::kDuration},     {"1h", UnitKind::kDuration},
      {"989TFLOPS", UnitKind::kFlopRate}, {"2.5PFLOP/s", UnitKind::kFlopRate},
      {"141", UnitKind::kBytes},          {"-4GB", UnitKind::kBytes},
      {"+4GB", UnitKind::kBytes},         {"nanGB", UnitKind::kBytes},
      {"infTB/s", UnitKind::kBandwidth},  {"GB", UnitKind::kBytes},
      {"4Gb", UnitKind::kBytes},          {"4GB", UnitKind::kBandwidth},
      {"4GiB/s", UnitKind::kBytes},       {"2 fortnights", UnitKind::kDuration},
      {"2ks", UnitKind::kDuration},       {"1TFLOPs", UnitKind::kFlopRate},
      {"0x10B", UnitKind::kBytes},        {"1e5", UnitKind::kDuration},
      {"700W", UnitKind::kPower},         {"1.5 kW", UnitKind::kPower},
      {"700", UnitKind::kPower},          {"7Wh", UnitKind::kPower},
  };
  for (const Text& t : texts) {
    bool parses = true;
    try {
      parse_quantity(t.text, t.kind);
    } catch (const UnitError&) {
      parses = false;
    }
    EXPECT_EQ(std::regex_search(t.text, std::regex(quantity_pattern(t.kind))), parses) << t.text;
  }
}

TEST(Units, FormattingPicksAReadableScale) {
  EXPECT_EQ(format_bytes(327680), "320.0 KiB");
  EXPECT_EQ(format_bandwidth(5.898e9), "5.90 GB/s");
  EXPECT_EQ(format_duration(0.25), "250.00 ms");
}

TEST(TokenCount, PowersOfTwoAndTheOptionInEveryError) {
  EXPECT_EQ(parse_token_count("--context", "4096"), 4096);
  EXPECT_EQ(parse_token_count("--context", "32K"), 32768);
  EXPECT_EQ(parse_token_count("--context", "1M"), 1048576);
  auto message = [](const std::string& text) {
    try {
      parse_token_count("--sweep", text);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("-4K"), "--sweep: expected a positive token count such as 4096 or 32K, got '-4K'");
  EXPECT_EQ(message("4G"), "--sweep: expected a positive token count such as 4096 or 32K, got '4G'");
  EXPECT_EQ(message("K"), "--sweep: expected a token count such as 4096 or 32K, got 'K'");
  EXPECT_EQ(message("9007199254740993M"), "--sweep: '9007199254740993M' is more than 9223372036854775807 tokens");
}

}  // namespace
}  // namespace kvtier
