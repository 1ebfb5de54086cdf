#include "sim/workload/agent_workload.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "sim/core/config_files.h"
#include "sim/workload/test_util.h"
#include "sim/workload/trace_stats.h"

namespace kvtier {
namespace {

ConfigNode yaml(const std::string& text) {
  return ConfigNode::load_string(text, "workload.yaml");
}

TEST(AgentWorkload, TheBuiltInDefaultParses) {
  AgentWorkload w = default_agent_workload();
  EXPECT_EQ(w.agents, 4);
  EXPECT_EQ(w.shared_prefix_tokens, 16000);
  EXPECT_DOUBLE_EQ(w.reuse_fraction, 0.95);  // the AMD seed's figure
}

TEST(AgentWorkload, UnknownKeysAndBadValuesNameTheirPlace) {
  ConfigNode base = load_config("agent-default", "configs/workloads");
  ConfigNode typo = base;
  typo.set("reuse_fractoin", "0.9");
  EXPECT_THROW(
      {
        try {
          parse_agent_workload(typo);
        } catch (const ConfigError& e) {
          EXPECT_NE(std::string(e.what()).find("reuse_fraction"), std::string::npos) << e.what();
          throw;
        }
      },
      ConfigError);
  try {
    parse_agent_workload(
        yaml("agents: 2\nshared_prefix_tokens: 10\nfirst_message_tokens: 5\n"
             "turns_per_session: {dist: lognormal, median: -3, sigma: 1}\n"));
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "workload.yaml:4:46: turns_per_session.median: expected a positive median");
  }
}

// Every key of a small workload, with `changed` (one "key: value" line) in place of its key's line.
std::string workload_with(const std::string& changed) {
  std::string text =
      "agents: 2\nshared_prefix_tokens: 100\nfirst_message_tokens: 50\nturns_per_session: 3\n"
      "tool_turn_fraction: 0.5\ntool_output_tokens: 200\nuser_message_tokens: 20\noutput_tokens: 30\n"
      "tool_time_s: 1\nuser_think_time_s: 5\nreuse_fraction: 0.9\nmax_context_tokens: 10000\n"
      "compacted_tokens: 500\nsession_rate_per_s: 1\n";
  std::string key = changed.substr(0, changed.find(':') + 1);
  size_t at = text.find("\n" + key) + 1;
  return text.replace(at, text.find('\n', at) - at, changed);
}

std::string error_of(const std::string& changed) {
  try {
    parse_agent_workload(yaml(workload_with(changed)));
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

TEST(AgentWorkload, CountsAndPausesOutOfRangeAreLocatedErrorsNotSilentlyRaised) {
  EXPECT_EQ(error_of("agents: 2"), "no error");
  EXPECT_EQ(error_of("output_tokens: -5"), "workload.yaml:8:16: output_tokens: expected at least 1, got -5");
  EXPECT_EQ(error_of("turns_per_session: 0"),
            "workload.yaml:4:20: turns_per_session: expected at least 1, got 0");
  EXPECT_EQ(error_of("tool_output_tokens: {dist: normal, mean: 100, stddev: 50}"),
            "workload.yaml:6:21: tool_output_tokens: expected draws of at least 1, but it can draw -inf: set "
            "min: 1");
  EXPECT_EQ(error_of("tool_output_tokens: {dist: normal, mean: 100, stddev: 50, min: 1, max: 5000}"),
            "no error");
  EXPECT_EQ(error_of("user_message_tokens: {dist: uniform, low: -3, high: 10}"),
            "workload.yaml:7:22: user_message_tokens: expected draws of at least 1, but it can draw -3: set "
            "min: 1");
  EXPECT_EQ(error_of("first_message_tokens: {dist: lognormal, median: 100, sigma: 1}"),
            "workload.yaml:3:23: first_message_tokens: expected draws of at most 16777216, but it can draw "
            "inf: set "
            "max");
  EXPECT_EQ(error_of("first_message_tokens: 20000"),  // longer than max_context_tokens
            "workload.yaml:3:23: first_message_tokens: expected draws of at most 10000, but it can draw "
            "20000: set max");
  EXPECT_EQ(
      error_of("turns_per_session: 200000"),
      "workload.yaml:4:20: turns_per_session: expected draws of at most 100000, but it can draw 200000: "
      "set max");
  EXPECT_EQ(
      error_of("user_think_time_s: {dist: normal, mean: 5, stddev: 5}"),
      "workload.yaml:10:20: user_think_time_s: expected pauses of at least 0 s, but it can draw -inf: set "
      "min: 0");
  EXPECT_EQ(
      error_of("tool_time_s: -1"),
      "workload.yaml:9:14: tool_time_s: expected pauses of at least 0 s, but it can draw -1: set min: 0");
  EXPECT_EQ(error_of("max_context_tokens: 100000000"),
            "workload.yaml:12:21: max_context_tokens: expected a positive token count up to 16777216");
  EXPECT_EQ(error_of("agents: 0"), "workload.yaml:1:9: agents: expected a positive integer up to 1048576");
  EXPECT_EQ(error_of("session_rate_per_s: 0"),
            "workload.yaml:14:21: session_rate_per_s: expected a positive rate");
}

std::vector<std::vector<NativeTurn>> draw(const AgentWorkload& w, int sessions) {
  AgentSessionGenerator generator(w);
  std::vector<std::vector<NativeTurn>> out;
  for (int i = 0; i < sessions; ++i) out.push_back(generator.next_session());
  return out;
}

TEST(AgentSessionGenerator, SameSeedSameSessionsOtherSeedOthers) {
  AgentWorkload w = default_agent_workload();
  auto a = draw(w, 20), b = draw(w, 20);
  w.seed = 2;
  auto c = draw(w, 20);
  auto lengths = [](const auto& sessions) {
    std::vector<int64_t> v;
    for (const auto& s : sessions)
      for (const NativeTurn& t : s) v.push_back(t.new_tokens);
    return v;
  };
  EXPECT_EQ(lengths(a), lengths(b));
  EXPECT_NE(lengths(a), lengths(c));
}

TEST(AgentSessionGenerator, EachTurnKeepsTheConfiguredShareOfThePreviousContext) {
  AgentWorkload w = default_agent_workload();
  int checked = 0;
  for (const auto& session : draw(w, 50)) {
    int64_t context = session[0].prefix_tokens + session[0].new_tokens + session[0].output_tokens;
    for (size_t t = 1; t < session.size(); ++t) {
      const NativeTurn& turn = session[t];
      EXPECT_DOUBLE_EQ(turn.arrival_s, session[t - 1].arrival_s + session[t - 1].think_s);
      if (turn.keep_tokens == w.shared_prefix_tokens && context > w.max_context_tokens / 2) {
        EXPECT_GE(turn.new_tokens, w.compacted_tokens);  // compaction
      } else {
        EXPECT_EQ(turn.keep_tokens, std::max<int64_t>(w.shared_prefix_tokens, std::floor(0.95 * context)));
        EXPECT_GT(turn.keep_tokens + turn.new_tokens, context);  // grows by the new message
        ++checked;
      }
      context = turn.keep_tokens + turn.new_tokens + turn.output_tokens;
    }
    EXPECT_TRUE(session.back().last);
  }
  EXPECT_GT(checked, 500);
}

TEST(AgentSessionGenerator, ContextsReachTensToHundredsOfThousandsOfTokens) {
  AgentWorkload w = default_agent_workload();
  int64_t longest = 0;
  std::vector<int64_t> last_inputs;
  for (const auto& session : draw(w, 300)) {
    const NativeTurn& t = session.back();
    int64_t input = t.keep_tokens + t.prefix_tokens + t.new_tokens;
    longest = std::max(longest, input);
    last_inputs.push_back(input);
  }
  std::sort(last_inputs.begin(), last_inputs.end());
  EXPECT_GT(last_inputs[last_inputs.size() / 2], 20000);  // median session ends in the tens of thousands
  EXPECT_GT(longest, 150000);
  EXPECT_LE(longest, w.max_context_tokens + 40000 + w.compacted_tokens);
}

TEST(WriteAgentTrace, WritesTurnsInArrivalOrderThatReadBackWithHighReuse) {
  std::ostringstream out;
  int64_t sessions = write_agent_trace(default_agent_workload(), 3000, out);
  EXPECT_GT(sessions, 10);
  auto stream = testing::stream_of(out.str(), TraceFormat::kNative);
  std::vector<Request> requests = testing::read_all(*stream);
  ASSERT_EQ(requests.size(), 3000u);
  EXPECT_TRUE(std::is_sorted(requests.begin(), requests.end(),
                             [](const Request& a, const Request& b) { return a.arrival_s < b.arrival_s; }));
  auto again = testing::stream_of(out.str(), TraceFormat::kNative);
  TraceStats stats = compute_trace_stats(*again);
  // With 95 % of each context kept, most blocks are hits; not all, since every turn adds new tokens.
  EXPECT_GT(stats.block_hit_rate(), 0.85);
  EXPECT_LT(stats.block_hit_rate(), 0.99);
}

// The stream writes, as it is read, the bytes the writer writes at once: across its 64 KiB chunks and at
// its end.
TEST(WriteAgentTrace, TheStreamReadsAsTheWholeTrace) {
  std::ostringstream whole;
  write_agent_trace(default_agent_workload(), 5000, whole);
  ASSERT_GT(whole.str().size(), size_t{4} * (64 << 10));
  std::unique_ptr<std::istream> stream = agent_trace_stream(default_agent_workload(), 5000);
  std::ostringstream read;
  read << stream->rdbuf();
  EXPECT_EQ(read.str(), whole.str());
  EXPECT_EQ(stream->get(), std::char_traits<char>::eof());
}

TEST(Distribution, LognormalMedianAndClampsHold) {
  ConfigNode node = yaml("d: {dist: lognormal, median: 1000, sigma: 1.0, max: 5000}");
  Distribution d = Distribution::parse(node.child("d"));
  std::mt19937_64 rng(42);
  std::vector<double> draws(20001);
  for (double& x : draws) x = d.sample(rng);
  std::nth_element(draws.begin(), draws.begin() + 10000, draws.end());
  EXPECT_NEAR(draws[10000], 1000, 40);  // the median of 20,001 draws is within ~2 % of 1000
  EXPECT_LE(*std::max_element(draws.begin(), draws.end()), 5000);
  EXPECT_THROW(Distribution::parse(yaml("d: {dist: gamma, mean: 3}").child("d")), ConfigError);
  EXPECT_THROW(Distribution::parse(yaml("d: {dist: uniform, low: 3, high: 1}").child("d")), ConfigError);
}

}  // namespace
}  // namespace kvtier
