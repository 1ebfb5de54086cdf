// Preflight against hand-computed sizes: traces read through in the parent with located errors, and runs
// too big for a small, fake amount of memory (never the machine's) refused with the key that makes them so.
#include "sim/engine/preflight.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace kvtier {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

std::string temp_file(const std::string& name, const std::string& text) {
  std::filesystem::path path = std::filesystem::temp_directory_path() / ("kvtier-preflight-" + name);
  std::ofstream(path) << text;
  return path.string();
}

// Llama-3.1-8B on one H100, a 64 GiB DRAM tier; `workload` is the workload line (line 10).
Scenario scenario_with(const std::string& workload, const std::string& extra = "") {
  std::string yaml =
      "name: t\nmodel: llama-3.1-8b\nhardware: h100-sxm\ninstance: {gpus: 1, activation_reserve: 40GB}\n"
      "cache:\n  block_tokens: 512\n  tiers:\n    - {medium: hbm, kv: bf16}\n"
      "    - {medium: dram, kv: bf16, capacity: 64GiB}\n"
      "workload: " +
      workload + "\n" + extra;
  return parse_scenario(ConfigNode::load_string(yaml, "test.yaml"));
}

PreflightOptions with_memory(double bytes) {
  PreflightOptions options;
  options.available_bytes = bytes;
  return options;
}

std::string error_of(const Scenario& s, const PreflightOptions& options) {
  try {
    preflight(s, options);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

const std::string kSorted =
    "{\"timestamp\": 0, \"input_length\": 1000, \"output_length\": 10, \"hash_ids\": [1, 2]}\n"
    "{\"timestamp\": 4000, \"input_length\": 600, \"output_length\": 5, \"hash_ids\": [1, 3]}\n"
    "{\"timestamp\": 10000, \"input_length\": 100, \"output_length\": 1, \"hash_ids\": [4]}\n";

TEST(Preflight, AnOpenLoopTraceIsReadThroughAndItsSizeCounted) {
  std::string path = temp_file("sorted.jsonl", kSorted);
  RunEstimate e =
      preflight(scenario_with("{loop: open, source: trace, trace: " + path + "}", "sample_interval: 500ms\n"),
                with_memory(8 * kGiB));
  EXPECT_EQ(e.requests, 3);
  EXPECT_DOUBLE_EQ(e.simulated_s, 10.0);  // the last arrival, 10,000 ms
  EXPECT_DOUBLE_EQ(e.samples, 20.0);      // 10 s / 0.5 s
  // At most one step per token of work: ceil(input / 8192) prefill chunks + output tokens: 11 + 6 + 2.
  EXPECT_DOUBLE_EQ(e.steps, 19.0);
}

// A replica steps at most once per shortest step, as one instance does: four replicas, four times the
// steps, until the work itself bounds them.
TEST(Preflight, EachReplicaOfAClusterCountsItsOwnSteps) {
  const std::string long_answers = temp_file(
      "long.jsonl",
      "{\"timestamp\": 0, \"input_length\": 1000, \"output_length\": 1000000, \"hash_ids\": [1, 2]}\n"
      "{\"timestamp\": 10000, \"input_length\": 100, \"output_length\": 1, \"hash_ids\": [4]}\n");
  const std::string open = "{loop: open, source: trace, trace: " + long_answers + "}";
  RunEstimate one = preflight(scenario_with(open), with_memory(8 * kGiB));
  RunEstimate four = preflight(scenario_with(open, "cluster: {instances: 4}\n"), with_memory(8 * kGiB));
  ASSERT_LT(4 * one.steps, 1000000);  // bound by the time, not by the million tokens
  EXPECT_DOUBLE_EQ(four.steps, 4 * one.steps);
  EXPECT_EQ(four.requests, one.requests);
  const std::string sorted = "{loop: open, source: trace, trace: " + temp_file("sorted.jsonl", kSorted) + "}";
  EXPECT_DOUBLE_EQ(preflight(scenario_with(sorted, "cluster: {instances: 4}\n"), with_memory(8 * kGiB)).steps,
                   19.0);  // the work's 19 steps, as for one instance
}

TEST(Preflight, AnUnsortedOpenLoopTraceFailsAtItsLineInTheParent) {
  std::string path = temp_file(
      "unsorted.jsonl",
      kSorted + "{\"timestamp\": 9000, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [5]}\n");
  std::string error =
      error_of(scenario_with("{loop: open, source: trace, trace: " + path + "}"), with_memory(8 * kGiB));
  EXPECT_EQ(error.rfind(path + ":4: open-loop replay needs a trace sorted by time", 0), 0u) << error;
}

TEST(Preflight, ABadLineOfAClosedLoopTraceFailsAtItsLine) {
  std::string path = temp_file(
      "closed-bad.jsonl",
      kSorted + "{\"timestamp\": 12000, \"input_length\": 0, \"output_length\": 1, \"hash_ids\": []}\n");
  std::string error =
      error_of(scenario_with("{loop: closed, source: trace, trace: " + path + ", sessions: 2}"),
               with_memory(8 * kGiB));
  EXPECT_EQ(error.rfind(path + ":4: field 'input_length': a request needs at least 1 input token", 0), 0u)
      << error;
}

TEST(Preflight, ASampleIntervalOfANanosecondIsRefusedNamingTheKey) {
  Scenario s =
      scenario_with("{loop: closed, source: agent, agent: agent-default, sessions: 4, duration: 2min}",
                    "sample_interval: 1ns\n");
  std::string error = error_of(s, with_memory(8 * kGiB));
  // 120 s / 1 ns = 1.2e11 samples: past the event bound before memory is even considered.
  EXPECT_EQ(error.rfind("test.yaml:11:18: sample_interval: about 1.2e+11 events (1.2e+11 samples, ", 0), 0u)
      << error;
  EXPECT_NE(error.find("more than the 1e+09"), std::string::npos) << error;
  EXPECT_NE(error.find("--allow-huge"), std::string::npos) << error;
}

// Samples go to timeseries.csv as they are taken: 1.2e8 of them (2 min every 1 us, under the event
// bound) need no more memory than 120.
TEST(Preflight, SamplesAreWrittenAsTakenAndHoldNoMemory) {
  const std::string workload =
      "{loop: closed, source: agent, agent: agent-default, sessions: 1, duration: 2min}";
  Scenario often = scenario_with(workload, "sample_interval: 1us\n");
  EXPECT_EQ(error_of(often, with_memory(8 * kGiB)), "no error");
  RunEstimate every_us = preflight(often, with_memory(8 * kGiB));
  RunEstimate every_s = preflight(scenario_with(workload, "sample_interval: 1s\n"), with_memory(8 * kGiB));
  EXPECT_DOUBLE_EQ(every_us.samples, 1.2e8);
  EXPECT_DOUBLE_EQ(every_us.bytes, every_s.bytes);
}

TEST(Preflight, AHundredMillionSessionsAreRefusedBeforeAnyIsBuilt) {
  Scenario s = scenario_with(
      "{loop: closed, source: agent, agent: agent-default, sessions: 100000000, duration: 2min}");
  std::string error = error_of(s, with_memory(8 * kGiB));
  EXPECT_EQ(error.rfind("test.yaml:10:", 0), 0u) << error;
  EXPECT_NE(error.find("workload.sessions: 1e+08 sessions in flight needs about"), std::string::npos)
      << error;
}

TEST(Preflight, AnEndlessWindowIsRefusedNamingTheDuration) {
  Scenario s =
      scenario_with("{loop: closed, source: agent, agent: agent-default, sessions: 4, duration: 1e12h}");
  std::string error = error_of(s, with_memory(1024 * kGiB));
  EXPECT_EQ(error.rfind("test.yaml:10:", 0), 0u) << error;
  EXPECT_NE(error.find("workload.duration: about"), std::string::npos) << error;
}

TEST(Preflight, ABillionGeneratedRequestsAreRefusedBeforeTheTraceIsWritten) {
  Scenario s = scenario_with("{loop: open, source: agent, agent: agent-default, requests: 1000000000}");
  std::string error = error_of(s, with_memory(8 * kGiB));
  EXPECT_EQ(error.rfind(
                "test.yaml:10:71: workload.requests: 1e+09 generated requests are at least 2e+09 events", 0),
            0u)
      << error;
}

TEST(Preflight, MemoryIsSharedBetweenRunsThatGoAtOnce) {
  Scenario s =
      scenario_with("{loop: closed, source: agent, agent: agent-default, sessions: 100000, duration: 2min}");
  // With three times the run's bytes available, half of them is enough for one run, not for two.
  const double bytes = preflight(s, with_memory(1024 * kGiB)).bytes;
  EXPECT_EQ(error_of(s, with_memory(3 * bytes)), "no error");
  PreflightOptions two = with_memory(3 * bytes);
  two.concurrent_runs = 2;
  EXPECT_NE(error_of(s, two).find("shared by 2 runs at once"), std::string::npos);
}

TEST(Preflight, TheDefaultScenarioPassesOnAModestMachine) {
  Scenario s =
      scenario_with("{loop: closed, source: agent, agent: agent-default, sessions: 256, duration: 20min}");
  RunEstimate e = preflight(s, with_memory(4 * kGiB));
  EXPECT_DOUBLE_EQ(e.simulated_s, 1200);
  EXPECT_DOUBLE_EQ(e.samples, 1200);
  EXPECT_GT(e.requests, 256);
}

}  // namespace
}  // namespace kvtier
