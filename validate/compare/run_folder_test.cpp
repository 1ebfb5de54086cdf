// Reading output folders: what the fixtures hold, and a located error for each way a folder can be wrong.
#include "validate/compare/run_folder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>

#include "sim/core/config.h"
#include "validate/compare/compare_test_support.h"
#include "validate/compare/csv_table.h"
#include "validate/compare/stats.h"

namespace kvtier::validation {
namespace {

using testing::copy_fixture;
using testing::edit_file;
using testing::kFixtures;

std::string error_of(const std::filesystem::path& dir) {
  try {
    read_run_folder(dir);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

TEST(RunFolder, ReadsTheFixture) {
  RunFolder f = read_run_folder(kFixtures / "sim");
  ASSERT_EQ(f.variants.size(), 1u);
  const VariantRun& v = f.variants[0];
  EXPECT_EQ(v.name, "run");
  EXPECT_EQ(v.window_s, 10.0);
  EXPECT_EQ(v.tiers, (std::vector<std::string>{"hbm", "dram"}));
  EXPECT_EQ(v.hit_tokens, (std::vector<int64_t>{4096, 2048}));
  ASSERT_EQ(v.requests.size(), 6u);
  EXPECT_EQ(v.requests[3].line, 5u);
  EXPECT_EQ(v.requests[3].ttft_s, 0.49);
  EXPECT_EQ(v.requests[3].output_tokens, 3);
  ASSERT_EQ(v.link_bytes.size(), 2u);
  EXPECT_EQ(v.link_bytes[1].link, "pcie_d2h_0");
  ASSERT_TRUE(v.transfers.has_value());
  EXPECT_EQ(v.transfers->rows.size(), 3u);
  EXPECT_FALSE(read_run_folder(kFixtures / "hw-miss").variants[0].transfers.has_value());
}

std::filesystem::path folder_with_summary(const std::string& name, const std::string& summary) {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / ("kvtier-validate-" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "summary.json") << summary;
  return dir;
}

TEST(RunSpec, ReadsWhatTheHardwareRunRecorded) {
  std::filesystem::path dir =
      folder_with_summary("spec", R"({"command": "kvtier-hw serve s.yaml", "scenario": "small",
                  "run": {"scenario": "s.yaml", "trace": "t.jsonl", "set": ["seed=2", "slo.ttft=1s"],
                          "calibration": null}, "variants": []})");
  RunSpec spec = read_run_spec(dir);
  EXPECT_EQ(spec.scenario_name, "small");
  EXPECT_EQ(spec.scenario, "s.yaml");
  EXPECT_EQ(spec.trace, "t.jsonl");
  EXPECT_EQ(spec.set, (std::vector<std::string>{"seed=2", "slo.ttft=1s"}));
  EXPECT_FALSE(spec.calibration.has_value());
}

TEST(RunSpec, MissingOrMistypedKeysAreNamed) {
  auto error = [](const std::string& summary) {
    std::filesystem::path dir = folder_with_summary("spec-bad", summary);
    try {
      read_run_spec(dir);
    } catch (const ConfigError& e) {
      return std::string(e.what()).substr((dir / "summary.json").string().size());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error(R"({"scenario": "s", "variants": []})"),
            ": run: expected an object {scenario, trace, set, calibration}");
  EXPECT_EQ(error(R"({"scenario": "s", "run": {"scenario": "s.yaml", "trace": 3, "set": [],
                      "calibration": null}})"),
            ": run.trace: expected a path or null");
  EXPECT_EQ(error(R"({"scenario": "s", "run": {"scenario": "s.yaml", "trace": null, "set": [1],
                      "calibration": null}})"),
            ": run.set[0]: expected a key=value override");
  EXPECT_EQ(error(R"({"run": {}})"), ": scenario: expected the scenario's name");
}

TEST(RunFolder, MissingSummaryNamesTheFile) {
  std::filesystem::path dir = copy_fixture("sim", "no-summary");
  std::filesystem::remove(dir / "summary.json");
  EXPECT_EQ(error_of(dir).rfind((dir / "summary.json").string() + ": cannot read the file", 0), 0u)
      << error_of(dir);
}

TEST(RunFolder, MissingRequestsNamesTheFile) {
  std::filesystem::path dir = copy_fixture("sim", "no-requests");
  std::filesystem::remove(dir / "run/requests.csv");
  EXPECT_EQ(error_of(dir).rfind((dir / "run/requests.csv").string() + ": cannot read", 0), 0u)
      << error_of(dir);
}

TEST(RunFolder, MissingSummaryKeyNamesItsPath) {
  std::filesystem::path dir = copy_fixture("sim", "no-window");
  ASSERT_TRUE(edit_file(dir / "summary.json", "\"window_s\"", "\"window\""));
  EXPECT_EQ(error_of(dir),
            (dir / "summary.json").string() + ": variants[0].summary.window_s: expected a number of seconds");
}

TEST(RunFolder, MissingColumnNamesTheHeader) {
  std::filesystem::path dir = copy_fixture("sim", "no-column");
  ASSERT_TRUE(edit_file(dir / "run/requests.csv", "first_token_s", "first_token"));
  EXPECT_EQ(
      error_of(dir).rfind(
          (dir / "run/requests.csv").string() + ":1: no column 'first_token_s' (the header has: id,", 0),
      0u)
      << error_of(dir);
}

TEST(RunFolder, BadNumberNamesLineAndColumn) {
  std::filesystem::path dir = copy_fixture("sim", "bad-number");
  ASSERT_TRUE(edit_file(dir / "run/requests.csv", "2.412,2.604", "2.412,soon"));
  // Line 4 (request 2); completion_s is the ninth cell, starting at character 28.
  EXPECT_EQ(error_of(dir), (dir / "run/requests.csv").string() +
                               ":4:23: column 'completion_s': expected a number, got 'soon'");
}

TEST(RunFolder, RepeatedIdNamesTheSecondLine) {
  std::filesystem::path dir = copy_fixture("sim", "repeated-id");
  ASSERT_TRUE(edit_file(dir / "run/requests.csv", "\n3,1,1,", "\n2,1,1,"));
  EXPECT_EQ(error_of(dir),
            (dir / "run/requests.csv").string() + ":5:1: column 'id': request id 2 appears twice");
}

TEST(RunFolder, ShortRowNamesItsLine) {
  std::filesystem::path dir = copy_fixture("sim", "short-row");
  ASSERT_TRUE(edit_file(dir / "run/requests.csv", ",3072,0\n", ",3072\n"));
  EXPECT_EQ(error_of(dir),
            (dir / "run/requests.csv").string() + ":7: expected 16 cells as in the header, got 15");
}

TEST(RunFolder, TransfersOutOfOrderAreRefused) {
  std::filesystem::path dir = copy_fixture("sim", "transfer-order");
  ASSERT_TRUE(edit_file(dir / "run/transfers.csv", "1.01,1.05", "0.001,1.05"));
  EXPECT_EQ(error_of(dir),
            (dir / "run/transfers.csv").string() +
                ":3:18: column 'start_s': rows must be in the order transfers started; this one "
                "starts before the row above");
}

TEST(RunFolder, TransferEndingBeforeItStartsIsRefused) {
  std::filesystem::path dir = copy_fixture("sim", "transfer-end");
  ASSERT_TRUE(edit_file(dir / "run/transfers.csv", "2,2.1", "2,1.9"));
  EXPECT_EQ(error_of(dir), (dir / "run/transfers.csv").string() +
                               ":4:20: column 'end_s': the transfer ends before it starts");
}

TEST(CsvTable, QuotedCellsAreRefused) {
  EXPECT_THROW(CsvTable::parse("a,b\n1,\"2\"\n", "q.csv"), ConfigError);
}

TEST(CsvTable, EmptyFileIsRefused) {
  EXPECT_THROW(CsvTable::parse("", "e.csv"), ConfigError);
}

TEST(CsvTable, CrlfLinesRead) {
  CsvTable t = CsvTable::parse("a,b\r\n1,2\r\n", "crlf.csv");
  EXPECT_EQ(t.number(0, t.column("b")), 2.0);
}

TEST(Transfers, WriterSortsByStartAndReaderReadsItBack) {
  std::filesystem::path path = std::filesystem::temp_directory_path() / "kvtier-validate-transfers.csv";
  {
    std::ofstream out(path);
    write_transfers_csv(out, {{"hbm->dram", 4096, 2.5, 2.75, kNoRequest},
                              {"dram->hbm", 1 << 20, 0.125, 0.5, 3},
                              {"dram->hbm", 8192, 2.5, 3, 12}});
  }
  std::stringstream text;
  text << std::ifstream(path).rdbuf();
  EXPECT_EQ(text.str(),
            "path,bytes,start_s,end_s,request\ndram->hbm,1048576,0.125,0.5,3\nhbm->dram,4096,2.5,2.75,-1\n"
            "dram->hbm,8192,2.5,3,12\n");
  TransferRows back = read_transfers_csv(path, [](uint64_t id) { return id == 3 || id == 12; });
  EXPECT_TRUE(back.names_requests);
  ASSERT_EQ(back.rows.size(), 3u);
  EXPECT_EQ(back.rows[1].path, "hbm->dram");
  EXPECT_EQ(back.rows[1].seconds(), 0.25);
  EXPECT_EQ(back.rows[0].request, 3);
  EXPECT_EQ(back.rows[1].request, kNoRequest);
  EXPECT_EQ(back.rows[2].request, 12);
}

// A request the run does not hold is an error at its cell; a file from before the request column reads,
// every transfer for no request.
TEST(Transfers, RequestColumnIsCheckedAndOptional) {
  const std::filesystem::path path = std::filesystem::temp_directory_path() / "kvtier-transfers-request.csv";
  std::ofstream(path) << "path,bytes,start_s,end_s,request\ndram->hbm,1,0,1,3\nhbm->dram,1,0.5,1,4\n";
  try {
    read_transfers_csv(path, [](uint64_t id) { return id == 3; });
    FAIL() << "a transfer for request 4, which the run does not hold, was read";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind(path.string() + ":3:", 0), 0u) << what;
    EXPECT_NE(what.find("column 'request'"), std::string::npos) << what;
    EXPECT_NE(what.find("no request 4"), std::string::npos) << what;
  }
  std::ofstream(path) << "path,bytes,start_s,end_s\ndram->hbm,1,0,1\n";
  TransferRows old = read_transfers_csv(path, [](uint64_t) { return false; });
  EXPECT_FALSE(old.names_requests);
  ASSERT_EQ(old.rows.size(), 1u);
  EXPECT_EQ(old.rows[0].request, kNoRequest);
}

// The simulator's times are arbitrary doubles and its byte counts can pass 10^12: each number is written
// so that it reads back as the same double (0.1 + 0.2 is 0.30000000000000004, not 0.3), so that sums of
// bytes compare exactly and no time is rounded.
// A run adds transfers as they end and writes those started by a horizon it knows (no later transfer
// starts before it): the file is the one written from every transfer at once, sorted by start, ties in
// the order added.
TEST(Transfers, WritingAsTheRunGoesGivesTheSortedFile) {
  std::mt19937_64 random(4);
  std::vector<TransferRecord> ended;  // in the order they end
  std::vector<TransferRecord> moving;
  for (int step = 0; step < 2000; ++step) {
    const double now = step * 0.5;
    for (int k = 0; k < 3; ++k) {  // three start at every step, some together
      if (random() % 2) moving.push_back({"dram->hbm", double(random() % 9), now, 0});
    }
    std::shuffle(moving.begin(), moving.end(), random);
    while (!moving.empty() && random() % 3 == 0) {  // some end, in any order
      moving.back().end_s = now + 0.25;
      ended.push_back(moving.back());
      moving.pop_back();
    }
  }
  for (TransferRecord& t : moving) ended.push_back(t);
  std::ostringstream at_once;
  write_transfers_csv(at_once, ended);

  std::ostringstream as_it_goes;
  TransfersCsvWriter writer(as_it_goes);
  size_t written_by_horizon = 0;
  for (size_t i = 0; i < ended.size(); ++i) {
    writer.add(ended[i]);
    // The horizon: the earliest start among those not added yet.
    double horizon = std::numeric_limits<double>::infinity();
    for (size_t j = i + 1; j < ended.size(); ++j) horizon = std::min(horizon, ended[j].start_s);
    if (i % 97 == 0) {
      const size_t before = writer.held();
      writer.write_started_by(horizon);
      written_by_horizon += before - writer.held();
    }
  }
  writer.close();
  EXPECT_GT(written_by_horizon, ended.size() / 4);
  EXPECT_EQ(as_it_goes.str(), at_once.str());
}

// A batch of stores that started together is held as one, and written as its transfers added one by one
// in its place would be: among equal starts, in the order added, batches and lone transfers alike.
TEST(Transfers, ABatchIsWrittenAsItsTransfersAddedOneByOne) {
  std::mt19937_64 random(7);
  std::vector<TransferRecord> one_by_one;
  std::ostringstream batched;
  TransfersCsvWriter writer(batched);
  for (int i = 0; i < 3000; ++i) {
    const double start = double(random() % 50) * 0.25;  // many equal starts
    const std::string path = random() % 2 ? "hbm->dram" : "dram->nvme";
    if (random() % 3 == 0) {
      TransferRecord lone{"dram->hbm", double(i), start, start + 1};
      one_by_one.push_back(lone);
      writer.add(lone);
      continue;
    }
    std::vector<TransferRecord> batch;
    for (uint64_t k = random() % 5 + 1; k > 0; --k)
      batch.push_back({path, double(i) + 0.5, start, start + 2});
    one_by_one.insert(one_by_one.end(), batch.begin(), batch.end());
    writer.add_batch(batch);
  }
  EXPECT_EQ(writer.held(), one_by_one.size());
  writer.write_started_by(5.0);
  writer.close();
  EXPECT_EQ(writer.held(), 0u);
  std::ostringstream at_once;
  write_transfers_csv(at_once, one_by_one);
  EXPECT_EQ(batched.str(), at_once.str());
  // And, independently of the writer, the rows are the transfers stably sorted by start.
  std::stable_sort(one_by_one.begin(), one_by_one.end(),
                   [](const TransferRecord& a, const TransferRecord& b) { return a.start_s < b.start_s; });
  const std::filesystem::path path = std::filesystem::temp_directory_path() / "kvtier-transfers-batched.csv";
  std::ofstream(path) << batched.str();
  const std::vector<TransferRecord> back = read_transfers_csv(path, [](uint64_t) { return true; }).rows;
  ASSERT_EQ(back.size(), one_by_one.size());
  for (size_t i = 0; i < back.size(); ++i) {
    ASSERT_EQ(back[i].path, one_by_one[i].path) << "row " << i;
    ASSERT_EQ(back[i].bytes, one_by_one[i].bytes) << "row " << i;
    ASSERT_EQ(back[i].start_s, one_by_one[i].start_s) << "row " << i;
  }
}

TEST(Transfers, NumbersReadBackExactly) {
  std::filesystem::path path = std::filesystem::temp_directory_path() / "kvtier-validate-transfers-exact.csv";
  const double start = 0.1 + 0.2, end = 1.0 / 3, bytes = 123456789012345;
  {
    std::ofstream out(path);
    write_transfers_csv(out, {{transfer_path("nvme", "hbm"), bytes, start, end}});
  }
  std::stringstream text;
  text << std::ifstream(path).rdbuf();
  EXPECT_EQ(text.str(),
            "path,bytes,start_s,end_s,request\nnvme->hbm,123456789012345,0.30000000000000004,"
            "0.3333333333333333,-1\n");
  std::vector<TransferRecord> back = read_transfers_csv(path, [](uint64_t) { return true; }).rows;
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].bytes, bytes);
  EXPECT_EQ(back[0].start_s, start);
  EXPECT_EQ(back[0].end_s, end);
}

TEST(Transfers, WriterRefusesAPathWithAComma) {
  std::ostringstream out;
  EXPECT_THROW(write_transfers_csv(out, {{"dram,hbm", 1, 0, 1}}), std::invalid_argument);
  TransfersCsvWriter writer(out);
  EXPECT_THROW(writer.add_batch({{"hbm->dram", 1, 0, 1}, {"hbm\ndram", 1, 0, 1}}), std::invalid_argument);
}

}  // namespace
}  // namespace kvtier::validation
