// The sweep file's reader and its expansion into points, against points listed by hand.
#include "sim/engine/sweep_file.h"

#include <gtest/gtest.h>

#include "sim/core/config_error_test_support.h"

namespace kvtier {
namespace {

using testing::error_of;

SweepFile read(const std::string& text) { return read_sweep_file(ConfigNode::load_string(text, "s.yaml")); }

// "key=value key=value | seed" for each point.
std::vector<std::string> listed(const std::vector<SweepPoint>& points) {
  std::vector<std::string> out;
  for (const SweepPoint& p : points) {
    std::string line = p.id + ":";
    for (const Override& v : p.values) line += " " + v.path + "=" + v.value;
    if (p.seed) line += " seed " + std::to_string(*p.seed);
    out.push_back(line);
  }
  return out;
}

TEST(SweepFile, GridIsTheCartesianProductWithTheFirstKeyOutermost) {
  SweepFile sweep = read("scenario: h200-llama8b\ngrid:\n  workload.sessions: [8, 16]\n"
                         "  cache.tiers[1].capacity: [32GiB, 64GiB, 128GiB]\n");
  EXPECT_EQ(listed(expand_sweep(sweep)),
            (std::vector<std::string>{"p0: workload.sessions=8 cache.tiers[1].capacity=32GiB",
                                      "p1: workload.sessions=8 cache.tiers[1].capacity=64GiB",
                                      "p2: workload.sessions=8 cache.tiers[1].capacity=128GiB",
                                      "p3: workload.sessions=16 cache.tiers[1].capacity=32GiB",
                                      "p4: workload.sessions=16 cache.tiers[1].capacity=64GiB",
                                      "p5: workload.sessions=16 cache.tiers[1].capacity=128GiB"}));
  EXPECT_EQ(swept_keys(sweep), (std::vector<std::string>{"workload.sessions", "cache.tiers[1].capacity"}));
}

TEST(SweepFile, ZipWalksItsListsTogetherAndSeedsRepeatEachPoint) {
  SweepFile sweep = read("scenario: h200-llama8b\nzip:\n  workload.sessions: [8, 16]\n"
                         "  cache.tiers[1].capacity: [32GiB, 64GiB]\nseeds: [3, 7]\n");
  std::vector<SweepPoint> points = expand_sweep(sweep);
  EXPECT_EQ(listed(points),
            (std::vector<std::string>{"p0-seed3: workload.sessions=8 cache.tiers[1].capacity=32GiB seed 3",
                                      "p0-seed7: workload.sessions=8 cache.tiers[1].capacity=32GiB seed 7",
                                      "p1-seed3: workload.sessions=16 cache.tiers[1].capacity=64GiB seed 3",
                                      "p1-seed7: workload.sessions=16 cache.tiers[1].capacity=64GiB seed 7"}));
  for (size_t i = 0; i < points.size(); ++i) EXPECT_EQ(points[i].index, i);
}

TEST(SweepFile, ZipIsCrossedWithTheGridAfterItsKeys) {
  SweepFile sweep = read("scenario: x\ngrid: {a: [1, 2]}\nzip: {b: [x, y], c: [u, v]}\n");
  EXPECT_EQ(listed(expand_sweep(sweep)), (std::vector<std::string>{"p0: a=1 b=x c=u", "p1: a=1 b=y c=v",
                                                                   "p2: a=2 b=x c=u", "p3: a=2 b=y c=v"}));
}

TEST(SweepFile, ACountOfSeedsIsOneToNAndIdsArePaddedToTheLargest) {
  SweepFile sweep = read("scenario: x\ngrid: {a: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]}\nseeds: 2\n");
  std::vector<SweepPoint> points = expand_sweep(sweep);
  ASSERT_EQ(points.size(), 22u);
  EXPECT_EQ(points[0].id, "p00-seed1");
  EXPECT_EQ(points[1].id, "p00-seed2");
  EXPECT_EQ(points[21].id, "p10-seed2");
  EXPECT_EQ(points[21].values[0].value, "11");
}

TEST(SweepFile, PointOverridesAreTheFixedOnesThenThePointsThenTheSeed) {
  SweepFile sweep = read("scenario: x\nset: {workload.duration: 2min}\ngrid: {a: [1]}\nseeds: [4]\n");
  std::vector<Override> overrides = point_overrides(sweep, expand_sweep(sweep)[0]);
  ASSERT_EQ(overrides.size(), 3u);
  EXPECT_EQ(overrides[0].path + "=" + overrides[0].value, "workload.duration=2min");
  EXPECT_EQ(overrides[0].origin, "s.yaml:2:26: set.workload.duration");
  EXPECT_EQ(overrides[1].path + "=" + overrides[1].value, "a=1");
  EXPECT_EQ(overrides[1].origin, "s.yaml:3:12: grid.a[0]");
  EXPECT_EQ(overrides[2].path + "=" + overrides[2].value, "seed=4");
}

TEST(SweepFile, CommandLineSweepsAreGridKeys) {
  SweepFile sweep = sweep_from_arguments("h200-llama8b", "", {"workload.duration=1min"},
                                         {"workload.sessions=2,4", "seed=1,2"});
  EXPECT_EQ(listed(expand_sweep(sweep)),
            (std::vector<std::string>{"p0: workload.sessions=2 seed=1", "p1: workload.sessions=2 seed=2",
                                      "p2: workload.sessions=4 seed=1", "p3: workload.sessions=4 seed=2"}));
  EXPECT_EQ(error_of([] { sweep_from_arguments("x", "", {}, {"a=1,,2"}); }),
            "--sweep a=1,,2: expected key.path=v1,v2,... without empty values");
  EXPECT_EQ(error_of([] { sweep_from_arguments("x", "", {}, {"a=1", "a=2"}); }), "--sweep a=2: a is already swept");
}

TEST(SweepFile, TheCanonicalTextIgnoresLayoutAndComments) {
  SweepFile a = read("scenario: x   # the base\ngrid: {a: [1, 2]}\n");
  SweepFile b = read("scenario: x\n\ngrid:\n  a:\n    - 1\n    - 2\n");
  SweepFile c = read("scenario: x\ngrid: {a: [1, 3]}\n");
  EXPECT_EQ(canonical_text(a), canonical_text(b));
  EXPECT_NE(canonical_text(a), canonical_text(c));
}

TEST(SweepFile, BadFilesGiveLocatedErrors) {
  EXPECT_EQ(error_of([] { read("scenario: x\ngird: {a: [1]}\n"); }),
            "s.yaml:2:1: gird: unknown key 'gird' (did you mean 'grid'?)");
  EXPECT_EQ(error_of([] { read("scenario: x\nzip: {a: [1, 2], b: [1]}\n"); }),
            "s.yaml:2:21: zip.b: expected 2 values, as many as zip.a has (zip walks its lists together), got 1");
  EXPECT_EQ(error_of([] { read("scenario: x\ngrid: {}\n"); }),
            "s.yaml:2:7: grid: expected at least one key.path: [values]");
  EXPECT_EQ(error_of([] { read("scenario: x\ngrid: {a: []}\n"); }),
            "s.yaml:2:11: grid.a: expected a non-empty list of values");
  EXPECT_EQ(error_of([] { read("scenario: x\n"); }), "s.yaml:1:1: nothing varies: expected grid:, zip: or seeds:");
  EXPECT_EQ(error_of([] { read("scenario: x\ngrid: {a: [1]}\nset: {a: 2}\n"); }),
            "s.yaml:3:10: set.a: also swept: set it or sweep it");
  EXPECT_EQ(error_of([] { read("scenario: x\nseeds: 0\n"); }),
            "s.yaml:2:8: seeds: expected a count of seeds of at least 1, or a list of seeds");
  EXPECT_EQ(error_of([] { read("scenario: x\nseeds: [1, 1]\n"); }), "s.yaml:2:12: seeds[1]: seed given twice");
}

}  // namespace
}  // namespace kvtier
