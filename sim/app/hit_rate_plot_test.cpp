#include "sim/app/hit_rate_plot.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "sim/core/config.h"

namespace kvtier {
namespace {

TEST(HitRatePlot, WritesTheFileOrSaysWhyNot) {
  std::filesystem::path out = std::filesystem::temp_directory_path() / "kvtier-cache-test-plot.svg";
  std::filesystem::remove(out);
  HitRatePlot plot{"test", "capacity (tokens)", {{"lru", {1024, 4096}, {0.1, 0.3}}}, 0.4};
  try {
    write_hit_rate_plot(plot, out.string());
  } catch (const ConfigError& e) {
    GTEST_SKIP() << "no python3 with matplotlib here: " << e.what();
  }
  ASSERT_TRUE(std::filesystem::exists(out));
  EXPECT_GT(std::filesystem::file_size(out), 1000u);
  std::filesystem::remove(out);
}

}  // namespace
}  // namespace kvtier
