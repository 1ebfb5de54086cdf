#include "sim/workload/replay.h"

#include <gtest/gtest.h>

#include "sim/workload/test_util.h"

namespace kvtier {
namespace {

using testing::stream_of;

const char* kThreeRequests =
    R"({"timestamp": 1000, "input_length": 10, "output_length": 1, "hash_ids": [1]}
{"timestamp": 3000, "input_length": 10, "output_length": 1, "hash_ids": [2]}
{"timestamp": 7000, "input_length": 10, "output_length": 1, "hash_ids": [3]}
)";

std::vector<double> issue_all(ReplayDriver& driver) {
  std::vector<double> times;
  while (auto t = driver.next_ready_time()) {
    Request r = driver.pop_ready();
    EXPECT_DOUBLE_EQ(r.arrival_s, *t);
    times.push_back(r.arrival_s);
    driver.on_complete(r.id, r.arrival_s);
  }
  return times;
}

TEST(OpenLoop, IssuesAtTimestampsScaledByTheRateMultiplier) {
  auto driver = make_open_loop(stream_of(kThreeRequests, TraceFormat::kMooncake), {.rate_multiplier = 2});
  EXPECT_EQ(issue_all(*driver), (std::vector<double>{0.5, 1.5, 3.5}));
  EXPECT_TRUE(driver->done());
  EXPECT_EQ(driver->counts().issued, 3);
}

TEST(OpenLoop, TheWindowCutsTraceTimeAndStartsTheClockAtItsStart) {
  auto driver = make_open_loop(stream_of(kThreeRequests, TraceFormat::kMooncake),
                               {.rate_multiplier = 1, .start_s = 2, .duration_s = 4});
  EXPECT_EQ(issue_all(*driver), (std::vector<double>{1.0}));  // only the request at 3 s, at 3 - 2
}

TEST(OpenLoop, RejectsUnsortedTracesAndBadOptions) {
  const char* unsorted =
      R"({"timestamp": 5000, "input_length": 10, "output_length": 1, "hash_ids": [1]}
{"timestamp": 3000, "input_length": 10, "output_length": 1, "hash_ids": [2]}
)";
  auto driver = make_open_loop(stream_of(unsorted, TraceFormat::kMooncake), {});
  try {
    driver->pop_ready();  // reading ahead finds 3 s after 5 s
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("test.jsonl:2: open-loop replay needs a trace sorted by time", 0),
              0u)
        << e.what();
  }
  EXPECT_THROW(make_open_loop(stream_of(kThreeRequests, TraceFormat::kMooncake), {.rate_multiplier = 0}),
               ConfigError);
}

// Two sessions of two turns each; every response takes 1 s.
std::vector<Session> two_sessions() {
  std::vector<Session> sessions(2);
  for (int s = 0; s < 2; ++s) {
    sessions[s].id = 100 + s;
    for (int t = 0; t < 2; ++t) {
      Request r;
      r.turn = t;
      r.think_time_s = 5;
      r.block_ids = {static_cast<uint64_t>(10 * s + t)};
      sessions[s].turns.push_back(r);
    }
  }
  return sessions;
}

TEST(ClosedLoop, NextTurnFollowsCompletionPlusThinkTimeAndFinishedSessionsAreReplaced) {
  auto driver = make_closed_loop(make_trace_sessions(two_sessions()), {.concurrency = 1, .duration_s = 20});
  std::vector<std::pair<double, uint64_t>> issued;  // time, first block id
  while (auto t = driver->next_ready_time()) {
    Request r = driver->pop_ready();
    issued.emplace_back(r.arrival_s, r.block_ids[0]);
    driver->on_complete(r.id, r.arrival_s + 1);
  }
  // s0t0 at 0, done 1; s0t1 at 1 + 5 = 6, done 7; s1 replaces s0 at 7; s1t1 at 8 + 5 = 13, done 14;
  // then s0 again (round 2, ids salted) at 14, done 15; its second turn would be ready at 20: outside.
  ASSERT_EQ(issued.size(), 5u);
  EXPECT_EQ(issued[0], std::make_pair(0.0, uint64_t{0}));
  EXPECT_EQ(issued[1], std::make_pair(6.0, uint64_t{1}));
  EXPECT_EQ(issued[2], std::make_pair(7.0, uint64_t{10}));
  EXPECT_EQ(issued[3], std::make_pair(13.0, uint64_t{11}));
  EXPECT_DOUBLE_EQ(issued[4].first, 14.0);
  EXPECT_NE(issued[4].second, uint64_t{0});  // a replayed session does not reuse its first run's ids
  EXPECT_TRUE(driver->done());
  EXPECT_EQ(driver->counts().completed_in_window, 5);
}

TEST(ClosedLoop, GoodputCountsOnlyCompletionsInsideTheWindow) {
  auto driver = make_closed_loop(make_trace_sessions(two_sessions()), {.concurrency = 2, .duration_s = 10});
  std::vector<Request> in_flight;
  while (auto t = driver->next_ready_time()) in_flight.push_back(driver->pop_ready());
  ASSERT_EQ(in_flight.size(), 2u);  // both sessions start at 0
  EXPECT_EQ(in_flight[0].session_id, 0);
  EXPECT_EQ(in_flight[1].session_id, 1);
  driver->on_complete(in_flight[0].id, 3);   // inside
  driver->on_complete(in_flight[1].id, 12);  // after the window closed
  EXPECT_EQ(driver->counts().completed, 2);
  EXPECT_EQ(driver->counts().completed_in_window, 1);
  // Session 0's second turn became ready at 3 + 5 = 8, inside the window; session 1's at 17 never will.
  EXPECT_DOUBLE_EQ(*driver->next_ready_time(), 8.0);
  Request last = driver->pop_ready();
  EXPECT_FALSE(driver->next_ready_time());
  EXPECT_FALSE(driver->done());
  driver->on_complete(last.id, 9);
  EXPECT_DOUBLE_EQ(*driver->next_ready_time(), 9.0);  // the finished session is replaced at once
}

TEST(ClosedLoop, GeneratedSessionsAreDeterministicForASeed) {
  AgentWorkload workload = default_agent_workload();
  auto run = [&] {
    auto driver =
        make_closed_loop(make_generated_sessions(workload, 256), {.concurrency = 4, .duration_s = 600});
    std::vector<std::pair<double, size_t>> log;
    while (auto t = driver->next_ready_time()) {
      Request r = driver->pop_ready();
      log.emplace_back(r.arrival_s, r.block_ids.size());
      driver->on_complete(r.id, r.arrival_s + 0.5 + 1e-5 * static_cast<double>(r.input_tokens));
    }
    return log;
  };
  auto first = run();
  EXPECT_GT(first.size(), 50u);
  EXPECT_EQ(first, run());
}

// The recorded replay issues what a closed loop would have issued, at the recorded times.
TEST(RecordedClosedLoop, IssuesTheClosedLoopsTurnsAtTheRecordedTimesInArrivalOrder) {
  // Session 1's first turn arrives before session 0's second; the record lists them out of order.
  std::vector<RecordedTurn> turns = {{0, 0, 0.0}, {0, 1, 6.5}, {1, 0, 2.25}, {1, 1, 9.0}};
  auto driver = make_recorded_closed_loop(make_trace_sessions(two_sessions()), turns, 20);
  std::vector<std::tuple<double, uint64_t, int64_t, int32_t>> issued;  // time, first block, session, turn
  while (auto t = driver->next_ready_time()) {
    Request r = driver->pop_ready();
    EXPECT_EQ(r.id, issued.size());
    issued.emplace_back(r.arrival_s, r.block_ids[0], r.session_id, r.turn);
    driver->on_complete(r.id, r.arrival_s + 30);  // completions issue nothing
  }
  using Issued = std::tuple<double, uint64_t, int64_t, int32_t>;
  EXPECT_EQ(issued, (std::vector<Issued>{{0.0, 0, 0, 0}, {2.25, 10, 1, 0}, {6.5, 1, 0, 1}, {9.0, 11, 1, 1}}));
  EXPECT_TRUE(driver->done());
  EXPECT_EQ(driver->counts().completed, 4);
  EXPECT_EQ(driver->counts().completed_in_window, 0);  // every completion came after 20 s
}

TEST(RecordedClosedLoop, SessionsAreNumberedAsTheClosedLoopNumbersThem) {
  // A closed loop of two sessions in flight, each turn answered in 1 s, recorded as it ran; the
  // recorded replay of that record issues the same requests at the same times.
  AgentWorkload workload = default_agent_workload();
  auto closed =
      make_closed_loop(make_generated_sessions(workload, 256), {.concurrency = 2, .duration_s = 300});
  std::vector<Request> issued;
  std::vector<RecordedTurn> record;
  while (auto t = closed->next_ready_time()) {
    issued.push_back(closed->pop_ready());
    record.push_back({issued.back().session_id, issued.back().turn, issued.back().arrival_s});
    closed->on_complete(issued.back().id, issued.back().arrival_s + 1);
  }
  ASSERT_GT(issued.size(), 20u);
  auto replay = make_recorded_closed_loop(make_generated_sessions(workload, 256), record, 300);
  for (const Request& expected : issued) {
    ASSERT_TRUE(replay->next_ready_time());
    Request r = replay->pop_ready();
    EXPECT_EQ(r.arrival_s, expected.arrival_s);
    EXPECT_EQ(r.session_id, expected.session_id);
    EXPECT_EQ(r.turn, expected.turn);
    EXPECT_EQ(r.block_ids, expected.block_ids);
    EXPECT_EQ(r.input_tokens, expected.input_tokens);
  }
  EXPECT_FALSE(replay->next_ready_time());
}

TEST(RecordedClosedLoop, RefusesATurnRecordedTwiceOrMissing) {
  EXPECT_THROW(make_recorded_closed_loop(make_trace_sessions(two_sessions()), {{0, 0, 0.0}, {0, 0, 1.0}}, 20),
               ConfigError);
  auto driver = make_recorded_closed_loop(make_trace_sessions(two_sessions()), {{0, 5, 0.0}}, 20);
  try {
    driver->pop_ready();
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), "recorded arrivals: session 0 has no turn 5 (2 turns)");
  }
  EXPECT_THROW(make_recorded_closed_loop(make_trace_sessions(two_sessions()), {}, 0), ConfigError);
}

TEST(LoadSessions, BailianParentLinksBecomeSessionsWithArrivalGapsAsThinkTimes) {
  std::string path = testing::temp_file(
      "bailian.jsonl",
      R"({"chat_id": 1, "parent_chat_id": -1, "timestamp": 1, "input_length": 16, "output_length": 5, "turn": 1, "hash_ids": [1]}
{"chat_id": 2, "parent_chat_id": -1, "timestamp": 2, "input_length": 16, "output_length": 5, "turn": 1, "hash_ids": [9]}
{"chat_id": 3, "parent_chat_id": 1, "timestamp": 31, "input_length": 32, "output_length": 5, "turn": 2, "hash_ids": [1, 4]}
)");
  std::vector<Session> sessions = load_sessions(path, {.format = TraceFormat::kBailian});
  std::filesystem::remove(path);
  ASSERT_EQ(sessions.size(), 2u);
  ASSERT_EQ(sessions[0].turns.size(), 2u);
  EXPECT_DOUBLE_EQ(sessions[0].turns[0].think_time_s, 30);
  EXPECT_EQ(sessions[1].turns.size(), 1u);
}

}  // namespace
}  // namespace kvtier
