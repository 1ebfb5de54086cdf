#include "sim/core/csv_text.h"

#include <gtest/gtest.h>

#include <string>

namespace kvtier {
namespace {

TEST(ShortestText, WritesEachValueAsTheShortestExactTextAndNoticesEveryChange) {
  ShortestText text;
  std::string row;
  for (double value : {0.1, 0.1, 0.0, -0.0, -0.0, 1e300, 123456789.25, 0.1}) {
    text.append(row, value);
    row += ',';
  }
  EXPECT_EQ(row, "0.1,0.1,0,-0,-0,1e+300,123456789.25,0.1,");
}

TEST(ShortestText, ItsFirstValueMayBeZero) {
  ShortestText text;
  std::string row;
  text.append(row, 0.0);  // the bits a fresh ShortestText starts from
  EXPECT_EQ(row, "0");
}

}  // namespace
}  // namespace kvtier
