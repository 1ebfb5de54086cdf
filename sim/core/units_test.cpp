#include "units.h"

#include <gtest/gtest.h>

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

TEST(Units, FormattingPicksAReadableScale) {
  EXPECT_EQ(format_bytes(327680), "320.0 KiB");
  EXPECT_EQ(format_bandwidth(5.898e9), "5.90 GB/s");
  EXPECT_EQ(format_duration(0.25), "250.00 ms");
}

}  // namespace
}  // namespace kvtier
