// `kvtier sweep` end to end against the binary, on a scenario small enough that a sweep takes about a
// second: shards merged are byte for byte one unsharded run, a killed sweep resumed loses nothing and
// ends as an uninterrupted one, the short form `simulate --sweep` is the same sweep, and bad input is
// refused (exit 2, located) before anything runs.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "sim/cli/cli_test_support.h"
#include "sim/core/temporary_folder.h"

namespace fs = std::filesystem;

namespace kvtier {
namespace {

using testing::run_kvtier;

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_text(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

// Every file under `dir` by its relative path, with its bytes.
std::map<std::string, std::string> tree(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file()) files[fs::relative(entry.path(), dir).string()] = read_text(entry.path());
  }
  return files;
}

size_t point_files(const fs::path& points) {
  size_t count = 0;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(points, error)) count += entry.path().extension() == ".json";
  return count;
}

class Sweep : public ::testing::Test {
 protected:
  void SetUp() override {
    scenario_ = (root_ / "tiny.yaml").string();
    write_text(scenario_, testing::kTinyScenario);
    sweep_ = (root_ / "tiny-sweep.yaml").string();
    write_text(sweep_, "scenario: " + scenario_ +
                           "\nset: {workload.sessions: 3}\ngrid:\n  cache.tiers[1].capacity: [1GiB, 4GiB, 64GiB]\n"
                           "seeds: 2\n");
  }

  testing::CliResult sweep(const std::string& args) {
    return run_kvtier("sweep " + sweep_ + " --no-plots --quiet " + args);
  }
  std::string dir(const std::string& name) const { return (root_ / name).string(); }

  TemporaryFolder folder_{"kvtier_sweep"};
  const fs::path& root_ = folder_.path();
  std::string scenario_, sweep_;
};

TEST_F(Sweep, ShardsMergedAreByteForByteOneUnshardedRun) {
  ASSERT_EQ(sweep("--jobs 2 --out " + dir("all")).exit_code, 0);
  ASSERT_EQ(sweep("--jobs 2 --shard 0/2 --out " + dir("s0")).exit_code, 0);
  ASSERT_EQ(sweep("--jobs 2 --shard 1/2 --out " + dir("s1")).exit_code, 0);
  EXPECT_EQ(point_files(dir("s0") + "/points"), 3u);  // indices 0, 2, 4 of the 6
  testing::CliResult merged = run_kvtier("sweep merge " + dir("s1") + " " + dir("s0") + " --no-plots --out " + dir("m"));
  ASSERT_EQ(merged.exit_code, 0) << merged.out;
  std::map<std::string, std::string> all = tree(dir("all"));
  EXPECT_EQ(all.size(), 2u + 6u + 2u);  // spec, marker, 6 points, sweep.csv and sweep.json
  EXPECT_EQ(tree(dir("m")), all);
  // One row per point, variant and seed.
  std::string csv = all.at("sweep.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1 + 6 * 2);
  EXPECT_TRUE(csv.starts_with("point,cache.tiers[1].capacity,seed,variant,")) << csv.substr(0, 200);
  EXPECT_NE(csv.find("\np1,4GiB,1,breakeven,"), std::string::npos) << csv;
}

TEST_F(Sweep, MergeRefusesAMissingShardADoubledPointAndAnotherSweep) {
  ASSERT_EQ(sweep("--shard 0/2 --out " + dir("s0")).exit_code, 0);
  testing::CliResult missing = run_kvtier("sweep merge " + dir("s0") + " --out " + dir("m"));
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.out.find("point p0-seed2 is in none of the folders"), std::string::npos) << missing.out;
  testing::CliResult doubled = run_kvtier("sweep merge " + dir("s0") + " " + dir("s0") + " --out " + dir("m"));
  EXPECT_EQ(doubled.exit_code, 2);
  EXPECT_NE(doubled.out.find("point p0-seed1 is in both"), std::string::npos) << doubled.out;
  write_text(sweep_, read_text(sweep_) + "zip:\n  workload.duration: [1min]\n");
  ASSERT_EQ(sweep("--shard 1/2 --out " + dir("other")).exit_code, 0);
  testing::CliResult other = run_kvtier("sweep merge " + dir("s0") + " " + dir("other") + " --out " + dir("m"));
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_NE(other.out.find("a shard of a different sweep"), std::string::npos) << other.out;
  EXPECT_FALSE(fs::exists(dir("m")));
}

TEST_F(Sweep, AKilledSweepResumedLosesNothingAndEndsAsAnUninterruptedOne) {
  ASSERT_EQ(sweep("--jobs 2 --out " + dir("whole")).exit_code, 0);
  std::string out = dir("resumed");
  pid_t pid = fork();
  if (pid == 0) {
    std::freopen("/dev/null", "w", stdout);
    std::freopen("/dev/null", "w", stderr);
    execl(KVTIER_BINARY, KVTIER_BINARY, "sweep", sweep_.c_str(), "--no-plots", "--jobs", "1", "--out", out.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  for (int i = 0; i < 2000 && point_files(out + "/points") < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  size_t finished = point_files(out + "/points");
  ASSERT_GE(finished, 2u);
  ASSERT_LT(finished, 6u) << "the sweep ended before it was killed: nothing to resume";
  std::map<std::string, std::string> before = tree(out);
  testing::CliResult rerun = run_kvtier("sweep " + sweep_ + " --no-plots --jobs 2 --out " + out);
  ASSERT_EQ(rerun.exit_code, 0) << rerun.out;
  EXPECT_NE(rerun.out.find("kvtier sweep: " + std::to_string(finished) + "/6 points"), std::string::npos) << rerun.out;
  std::map<std::string, std::string> after = tree(out);
  for (const auto& [path, text] : before) {
    if (path.starts_with("points/p")) {
      EXPECT_EQ(after.at(path), text) << path << " changed on resume";
    }
  }
  EXPECT_EQ(after, tree(dir("whole")));  // and no temporary file is left
}

TEST_F(Sweep, TheShortFormIsTheSameSweep) {
  write_text(sweep_, "scenario: " + scenario_ + "\nset: {workload.sessions: 3}\n"
                         "grid:\n  cache.tiers[1].capacity: [1GiB, 64GiB]\n  seed: [1, 2]\n");
  ASSERT_EQ(sweep("--out " + dir("file")).exit_code, 0);
  testing::CliResult short_form =
      run_kvtier("simulate " + scenario_ + " --set workload.sessions=3 --sweep cache.tiers[1].capacity=1GiB,64GiB "
                 "--sweep seed=1,2 --no-plots --out " + dir("short"));
  ASSERT_EQ(short_form.exit_code, 0) << short_form.out;
  EXPECT_EQ(tree(dir("short")), tree(dir("file")));
  EXPECT_NE(short_form.out.find("p3"), std::string::npos) << short_form.out;  // the table's last point
}

TEST_F(Sweep, BadInputIsRefusedBeforeAnythingRuns) {
  write_text(sweep_, "scenario: " + scenario_ + "\ngrid:\n  cache.tiers[1].capacty: [1GiB, 64GiB]\n");
  testing::CliResult key = sweep("--out " + dir("x"));
  EXPECT_EQ(key.exit_code, 2);
  EXPECT_NE(key.out.find("tiny-sweep.yaml:3:28: grid.cache.tiers[1].capacty[0]"), std::string::npos) << key.out;
  write_text(sweep_, "scenario: " + scenario_ + "\ngrid:\n  cache.tiers[1].capacity: [1GiB, lots]\n");
  testing::CliResult value = sweep("--out " + dir("x"));
  EXPECT_EQ(value.exit_code, 2);
  EXPECT_NE(value.out.find("tiny-sweep.yaml:3:35: grid.cache.tiers[1].capacity[1]"), std::string::npos) << value.out;
  EXPECT_FALSE(fs::exists(dir("x")));
  testing::CliResult shard = sweep("--shard 2/2 --out " + dir("x"));
  EXPECT_EQ(shard.exit_code, 2);
  EXPECT_NE(shard.out.find("--shard '2/2': expected i/N with 0 <= i < N"), std::string::npos) << shard.out;
}

TEST_F(Sweep, AFolderOfAnotherSweepIsRefusedAndLeftAlone) {
  ASSERT_EQ(sweep("--out " + dir("d")).exit_code, 0);
  std::map<std::string, std::string> before = tree(dir("d"));
  write_text(sweep_, "scenario: " + scenario_ + "\ngrid:\n  cache.tiers[1].capacity: [2GiB]\n");
  testing::CliResult other = sweep("--out " + dir("d"));
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_NE(other.out.find("holds the results of a different sweep"), std::string::npos) << other.out;
  EXPECT_EQ(tree(dir("d")), before);
}

}  // namespace
}  // namespace kvtier
