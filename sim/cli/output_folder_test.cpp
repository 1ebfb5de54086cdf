// The output folder contract of `kvtier simulate`, end to end against the binary: what is refused and
// left untouched, what --force may replace, and that failures and signals leave neither a result nor a
// temporary folder nor a simulation process behind.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace fs = std::filesystem;

namespace kvtier {
namespace {

struct Outcome {
  int exit_code;  // -1 when a signal ended it
  std::string out;  // stdout and stderr together
};

std::string shell_quoted(const std::string& text) {
  std::string q = "'";
  for (char c : text) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// `kvtier ARGS` run by bash in `dir`, after the shell commands `setup` (environment, limits).
Outcome kvtier_in(const fs::path& dir, const std::string& args, const std::string& setup = "") {
  std::string script = "cd " + shell_quoted(dir.string()) + " && " + setup + " " + KVTIER_BINARY + " " + args;
  FILE* pipe = popen(("bash -c " + shell_quoted(script) + " 2>&1").c_str(), "r");
  std::string out;
  std::array<char, 4096> buffer;
  while (size_t n = fread(buffer.data(), 1, buffer.size(), pipe)) out.append(buffer.data(), n);
  int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

std::set<std::string> entries(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_text(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

class OutputFolder : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("kvtier_out_" + std::to_string(getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    work_ = root_ / "work";
    fs::create_directories(work_);
    scenario_ = (root_ / "small.yaml").string();
    write_text(scenario_,
               "name: small\nmodel: llama-3.1-8b\nhardware: h200\n"
               "instance: {activation_reserve: 8GiB}\n"
               "cache:\n  block_tokens: 512\n  tiers:\n    - {medium: hbm, kv: bf16}\n"
               "    - {medium: dram, kv: bf16, capacity: 64GiB}\n"
               "workload: {loop: closed, source: agent, agent: agent-default, sessions: 4, duration: 2min}\n");
  }
  void TearDown() override { fs::remove_all(root_); }

  // A simulate of the small scenario, run in work_.
  Outcome simulate(const std::string& args, const std::string& setup = "") {
    return kvtier_in(work_, "simulate " + scenario_ + " --no-plots " + args, setup);
  }
  // A folder holding a person's files: they must survive every refusal.
  fs::path users_folder(const std::string& name) {
    fs::path dir = work_ / name;
    write_text(dir / "thesis.tex", "years of work\n");
    write_text(dir / "data" / "raw.csv", "1,2,3\n");
    return dir;
  }
  void expect_users_folder_intact(const fs::path& dir) {
    EXPECT_EQ(entries(dir), (std::set<std::string>{"data", "thesis.tex"}));
    EXPECT_EQ(read_text(dir / "thesis.tex"), "years of work\n");
    EXPECT_EQ(read_text(dir / "data" / "raw.csv"), "1,2,3\n");
  }

  fs::path root_, work_;
  std::string scenario_;
};

TEST_F(OutputFolder, CurrentFolderIsRefusedEvenWithForce) {
  fs::path dir = users_folder("project");
  for (const char* force : {"", "--force"}) {
    Outcome r = kvtier_in(dir, "simulate " + scenario_ + " --no-plots --out . " + force);
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_NE(r.out.find("--out .: this is the current folder"), std::string::npos) << r.out;
    expect_users_folder_intact(dir);
  }
}

TEST_F(OutputFolder, AFolderAboveTheCurrentOneIsRefused) {
  fs::path dir = users_folder("project");
  Outcome r = kvtier_in(dir / "data", "simulate " + scenario_ + " --no-plots --force --out ../");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  expect_users_folder_intact(dir);
}

TEST_F(OutputFolder, NonEmptyFolderIsRefusedWithAndWithoutTrailingSlash) {
  fs::path dir = users_folder("d");
  for (const char* out : {"d", "d/", "./d/../d//"}) {
    Outcome r = simulate(std::string("--out ") + out);
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_NE(r.out.find("not empty; pass --force"), std::string::npos) << r.out;
    expect_users_folder_intact(dir);
    EXPECT_EQ(entries(work_), std::set<std::string>{"d"});
  }
}

TEST_F(OutputFolder, ForceDoesNotReplaceAFolderKvtierDidNotWrite) {
  fs::path dir = users_folder("d");
  Outcome r = simulate("--force --out d/");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("not written by kvtier (it has no .kvtier-output file)"), std::string::npos) << r.out;
  expect_users_folder_intact(dir);
  EXPECT_EQ(entries(work_), std::set<std::string>{"d"});
}

TEST_F(OutputFolder, AnExistingFileIsNeverReplaced) {
  write_text(work_ / "results", "not a folder\n");
  for (const char* force : {"", "--force"}) {
    Outcome r = simulate(std::string("--out results ") + force);
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_NE(r.out.find("exists and is not a folder"), std::string::npos) << r.out;
    EXPECT_EQ(read_text(work_ / "results"), "not a folder\n");
    EXPECT_EQ(entries(work_), std::set<std::string>{"results"});
  }
}

TEST_F(OutputFolder, AnEmptyFolderIsUsed) {
  fs::create_directories(work_ / "empty");
  Outcome r = simulate("--out empty/");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(entries(work_ / "empty"),
            (std::set<std::string>{".kvtier-output", "report.md", "run", "summary.json"}));
  EXPECT_EQ(entries(work_), std::set<std::string>{"empty"});
}

// --no-transfers leaves out transfers.csv and nothing else: the other files are those of a run without it,
// and summary.json records the flag in the command. A sweep writes no CSVs, so it refuses the flag.
TEST_F(OutputFolder, NoTransfersLeavesOutOnlyTransfersCsv) {
  ASSERT_EQ(simulate("--out with").exit_code, 0);
  Outcome r = simulate("--no-transfers --out without");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(entries(work_ / "with" / "run"),
            (std::set<std::string>{"requests.csv", "timeseries.csv", "transfers.csv"}));
  EXPECT_EQ(entries(work_ / "without" / "run"), (std::set<std::string>{"requests.csv", "timeseries.csv"}));
  for (const char* file : {"run/requests.csv", "run/timeseries.csv"})
    EXPECT_EQ(read_text(work_ / "without" / file), read_text(work_ / "with" / file)) << file;
  EXPECT_NE(read_text(work_ / "without" / "summary.json").find("--no-transfers --out without"),
            std::string::npos);
  Outcome sweep = simulate("--no-transfers --sweep seed=1,2 --out sweep");
  EXPECT_EQ(sweep.exit_code, 2) << sweep.out;
  EXPECT_NE(sweep.out.find("--no-transfers"), std::string::npos) << sweep.out;
  EXPECT_FALSE(fs::exists(work_ / "sweep"));
}

TEST_F(OutputFolder, ForceReplacesAnEarlierKvtierFolderAndLeavesNothingBeside) {
  ASSERT_EQ(simulate("--out runs/a").exit_code, 0);
  EXPECT_TRUE(fs::exists(work_ / "runs" / "a" / ".kvtier-output"));
  write_text(work_ / "runs" / "a" / "stale.txt", "from before\n");
  Outcome refused = simulate("--out runs/a");
  EXPECT_EQ(refused.exit_code, 2) << refused.out;
  EXPECT_TRUE(fs::exists(work_ / "runs" / "a" / "stale.txt"));
  Outcome forced = simulate("--force --out runs/a/");
  ASSERT_EQ(forced.exit_code, 0) << forced.out;
  EXPECT_FALSE(fs::exists(work_ / "runs" / "a" / "stale.txt"));
  EXPECT_TRUE(fs::exists(work_ / "runs" / "a" / "run" / "requests.csv"));
  EXPECT_EQ(entries(work_ / "runs"), std::set<std::string>{"a"});
}

TEST_F(OutputFolder, ForceThroughASymlinkReplacesTheFolderItPointsAt) {
  ASSERT_EQ(simulate("--out real").exit_code, 0);
  write_text(work_ / "real" / "stale.txt", "from before\n");
  fs::create_directory_symlink("real", work_ / "link");
  Outcome r = simulate("--force --out link");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(fs::is_symlink(work_ / "link"));
  EXPECT_FALSE(fs::exists(work_ / "real" / "stale.txt"));
  EXPECT_TRUE(fs::exists(work_ / "real" / "summary.json"));
  EXPECT_EQ(entries(work_), (std::set<std::string>{"link", "real"}));
}

TEST_F(OutputFolder, NoVariantsIsAnErrorNotACrash) {
  Outcome r = simulate("--set 'variants=[]' --out out");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_TRUE(entries(work_).empty());
}

TEST_F(OutputFolder, AnUnwritableParentLeavesNothing) {
  Outcome r = simulate("--out /proc/kvtier_output_test/a/b");
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("cannot create"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists("/proc/kvtier_output_test"));
}

TEST_F(OutputFolder, AFailedWriteNamesTheFileAndLeavesNothing) {
  // A 1 KiB file size limit: requests.csv fails the way a full disk does, with an errno from write().
  Outcome r = simulate("--out deep/out", "trap '' XFSZ; ulimit -f 1;");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  fs::path csv = fs::canonical(work_) / "deep" / "out" / "run" / "requests.csv";
  EXPECT_NE(r.out.find("kvtier: error: cannot write " + csv.string() + ": File too large"), std::string::npos)
      << r.out;
  EXPECT_TRUE(entries(work_).empty());
}

TEST_F(OutputFolder, APlotScriptThatFailsLeavesNothing) {
  Outcome r = kvtier_in(work_, "simulate " + scenario_ + " --out out", "KVTIER_PYTHON=/bin/false");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("matplotlib could not draw the plots"), std::string::npos) << r.out;
  EXPECT_TRUE(entries(work_).empty());
}

// Without --out: one folder per scenario and trace under $KVTIER_RUNS_DIR, whatever the current folder;
// the same command again replaces its own results, another command takes the next name.
TEST_F(OutputFolder, TheDefaultFolderIsNamedByScenarioAndTraceAndNeverWritesOverAnotherRun) {
  const fs::path runs = root_ / "runs";
  const std::string env = "KVTIER_RUNS_DIR=" + shell_quoted(runs.string());
  ASSERT_EQ(simulate("", env).exit_code, 0);
  fs::create_directories(work_ / "elsewhere");
  Outcome again = kvtier_in(work_ / "elsewhere", "simulate " + scenario_ + " --no-plots", env);
  ASSERT_EQ(again.exit_code, 0) << again.out;
  EXPECT_NE(again.out.find((runs / "small").string()), std::string::npos) << again.out;
  EXPECT_EQ(entries(runs), std::set<std::string>{"small"});
  EXPECT_TRUE(entries(work_ / "elsewhere").empty());

  ASSERT_EQ(simulate("--set workload.sessions=2", env).exit_code, 0);
  const std::string trace = (fs::path(KVTIER_SOURCE_ROOT) / "traces/agent-sessions-1000.jsonl").string();
  ASSERT_EQ(simulate("--trace " + trace, env).exit_code, 0);
  EXPECT_EQ(entries(runs), (std::set<std::string>{"small", "small-2", "small--agent-sessions-1000"}));
  EXPECT_NE(read_text(runs / "small-2" / "summary.json").find("--set workload.sessions=2"),
            std::string::npos);

  // A folder kvtier did not write keeps its place and its files; the run goes beside it.
  fs::remove_all(runs / "small");
  write_text(runs / "small" / "thesis.tex", "years of work\n");
  ASSERT_EQ(simulate("", env).exit_code, 0);
  EXPECT_EQ(entries(runs / "small"), std::set<std::string>{"thesis.tex"});
  EXPECT_TRUE(fs::exists(runs / "small-3" / "summary.json"));
}

TEST_F(OutputFolder, TheRunsFolderFollowsXdgDataHomeThenHome) {
  Outcome xdg =
      simulate("", "unset KVTIER_RUNS_DIR; XDG_DATA_HOME=" + shell_quoted((root_ / "xdg").string()));
  ASSERT_EQ(xdg.exit_code, 0) << xdg.out;
  EXPECT_TRUE(fs::exists(root_ / "xdg" / "kvtier" / "runs" / "small" / "summary.json"));
  Outcome home =
      simulate("", "unset KVTIER_RUNS_DIR XDG_DATA_HOME; HOME=" + shell_quoted((root_ / "home").string()));
  ASSERT_EQ(home.exit_code, 0) << home.out;
  EXPECT_TRUE(fs::exists(root_ / "home" / ".local" / "share" / "kvtier" / "runs" / "small" / "summary.json"));
  EXPECT_EQ(entries(work_), std::set<std::string>{});
}

TEST_F(OutputFolder, APlotScriptThatDrawsNothingIsAFailure) {
  Outcome r = kvtier_in(work_, "simulate " + scenario_ + " --out out", "KVTIER_PYTHON=/bin/true");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("exited without writing " + (fs::canonical(work_) / "out" / "ttft_cdf.png").string()),
            std::string::npos)
      << r.out;
  EXPECT_TRUE(entries(work_).empty());
}

// The pids whose parent is `parent`, from /proc.
std::set<pid_t> children_of(pid_t parent) {
  std::set<pid_t> pids;
  for (const auto& e : fs::directory_iterator("/proc")) {
    std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string stat = read_text(e.path() / "stat");
    size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    int ppid = 0;
    if (std::sscanf(stat.c_str() + close + 1, " %*c %d", &ppid) == 1 && ppid == parent)
      pids.insert(std::stoi(name));
  }
  return pids;
}

class Interruption : public OutputFolder {
 protected:
  // Orphans of the kvtier process come to this test, which can then see whether they are still running.
  void SetUp() override {
    OutputFolder::SetUp();
    prctl(PR_SET_CHILD_SUBREAPER, 1);
  }
  void TearDown() override {
    prctl(PR_SET_CHILD_SUBREAPER, 0);
    OutputFolder::TearDown();
  }

  // Starts a simulate of two long variants and waits until it has created a folder and both children.
  pid_t start_simulate() {
    pid_t pid = fork();
    if (pid == 0) {
      if (chdir(work_.c_str()) != 0) _exit(127);
      std::freopen("/dev/null", "w", stdout);
      execl(KVTIER_BINARY, KVTIER_BINARY, "simulate", scenario_.c_str(), "--no-plots", "--out", "out", "--set",
            "workload.duration=180min", "--set", "variants=[{name: a}, {name: b}]", "--jobs", "2",
            static_cast<char*>(nullptr));
      _exit(127);
    }
    for (int i = 0; i < 600; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      if (!entries(work_).empty() && children_of(pid).size() == 2) return pid;
    }
    ADD_FAILURE() << "no output folder or no simulation processes after 6 s";
    return pid;
  }

  // True when `pid` ended (reaped here as an orphan, or already reaped by its parent) within 5 s.
  static bool ends(pid_t pid) {
    for (int i = 0; i < 500; ++i) {
      int status = 0;
      if (waitpid(pid, &status, WNOHANG) != 0) return true;  // reaped, or not our child (ECHILD)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    return false;
  }
};

TEST_F(Interruption, SigtermRemovesTheTemporaryFolderAndEveryChild) {
  pid_t pid = start_simulate();
  std::set<pid_t> simulations = children_of(pid);
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << "status " << status;
  for (pid_t child : simulations) EXPECT_TRUE(ends(child)) << "simulation " << child << " kept running";
  EXPECT_TRUE(entries(work_).empty());
}

TEST_F(Interruption, SimulationsDieWithAKilledParent) {
  pid_t pid = start_simulate();
  std::set<pid_t> simulations = children_of(pid);
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  for (pid_t child : simulations) EXPECT_TRUE(ends(child)) << "simulation " << child << " kept running";
  // SIGKILL cannot be caught: the temporary folder stays, hidden, and no result appears.
  std::set<std::string> left = entries(work_);
  ASSERT_EQ(left.size(), 1u);
  EXPECT_TRUE(left.begin()->starts_with(".out.kvtier-tmp-")) << *left.begin();
}

}  // namespace
}  // namespace kvtier
