#include "sim/workload/trace_reader.h"

#include <gtest/gtest.h>

#include "sim/workload/line_stream.h"
#include "sim/workload/test_util.h"

namespace kvtier {
namespace {

using testing::read_all;
using testing::stream_of;

const char* kMooncake =
    R"({"timestamp": 0, "input_length": 1000, "output_length": 10, "hash_ids": [1, 2]}
{"timestamp": 1500, "input_length": 1100, "output_length": 20, "hash_ids": [1, 2, 3]}

{"timestamp": 2500, "input_length": 512, "output_length": 30, "hash_ids": [4]}
)";

TEST(MooncakeReader, ReadsFieldsAndConvertsMillisecondsToSeconds) {
  auto stream = stream_of(kMooncake, TraceFormat::kMooncake);
  std::vector<Request> requests = read_all(*stream);
  ASSERT_EQ(requests.size(), 3u);  // the blank line is not a request
  EXPECT_EQ(requests[1].id, 1u);
  EXPECT_DOUBLE_EQ(requests[1].arrival_s, 1.5);
  EXPECT_EQ(requests[1].input_tokens, 1100);
  EXPECT_EQ(requests[1].output_tokens, 20);
  EXPECT_EQ(requests[1].block_ids, (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(requests[1].session_id, -1);
  EXPECT_EQ(stream->block_tokens(), 512);
}

TEST(MooncakeReader, ReblocksTo256TokensWithSharedPrefixesStillEqual) {
  auto stream = stream_of(kMooncake, TraceFormat::kMooncake, 256);
  std::vector<Request> r = read_all(*stream);
  EXPECT_EQ(stream->block_tokens(), 256);
  ASSERT_EQ(r[0].block_ids.size(), 4u);  // ceil(1000 / 256)
  ASSERT_EQ(r[1].block_ids.size(), 5u);  // ceil(1100 / 256)
  for (int i = 0; i < 3; ++i) EXPECT_EQ(r[0].block_ids[i], r[1].block_ids[i]) << i;
  EXPECT_NE(r[0].block_ids[3], r[1].block_ids[3]);  // 768-999 of block 2 vs 768-1023
}

TEST(MooncakeReader, BadLineNamesFileLineAndField) {
  std::string text = std::string(kMooncake) +
                     R"({"timestamp": 3000, "input_length": 2000, "output_length": 1, "hash_ids": [5]})";
  auto stream = stream_of(text, TraceFormat::kMooncake);
  Request r;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(stream->next(r));
  try {
    stream->next(r);
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(
        e.what(),
        "test.jsonl:5: field 'hash_ids': 1 blocks of 512 tokens cannot hold input_length 2000 (expected 4)");
  }
}

TEST(MooncakeReader, ErrorsNameTheFieldForEachKindOfMistake) {
  auto message = [](const std::string& line) {
    try {
      auto stream = stream_of(line, TraceFormat::kMooncake);
      Request r;
      stream->next(r);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message(R"({"input_length": 5, "output_length": 1, "hash_ids": [1]})"),
            "test.jsonl:1: field 'timestamp': missing");
  EXPECT_EQ(message(R"({"timestamp": -1, "input_length": 5, "output_length": 1, "hash_ids": [1]})"),
            "test.jsonl:1: field 'timestamp': expected a non-negative number, got -1.000000");
  EXPECT_EQ(message(R"({"timestamp": 0, "input_length": "5", "output_length": 1, "hash_ids": [1]})"),
            "test.jsonl:1: field 'input_length': expected an integer");
  EXPECT_EQ(message(R"({"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": [1, -2]})"),
            "test.jsonl:1: field 'hash_ids': expected a list of non-negative integers, found a negative one");
  EXPECT_EQ(
      message(R"({"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": [1])"),
      "test.jsonl:1: invalid JSON at column 72: syntax error while parsing object - unexpected end of input; "
      "expected '}'");
  EXPECT_EQ(message(R"([1, 2])"), "test.jsonl:1: expected a JSON object, found a list");
}

TEST(MooncakeReader, SkipBadLinesCountsThemAndKeepsTheRest) {
  std::string text = std::string(kMooncake) + "not json\n" +
                     R"({"timestamp": 9000, "input_length": 1, "output_length": 1, "hash_ids": [9]})";
  auto stream = stream_of(text, TraceFormat::kMooncake, 0, true);
  std::vector<Request> r = read_all(*stream);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(stream->skipped_lines(), 1);
  EXPECT_EQ(r[3].block_ids, (std::vector<uint64_t>{9}));
  EXPECT_EQ(r[3].id, 3u);
}

TEST(BailianReader, FollowsParentLinksToSessionsAndReadsSeconds) {
  const char* text =
      R"({"chat_id": 10, "parent_chat_id": -1, "timestamp": 1.5, "input_length": 40, "output_length": 5, "type": "text", "turn": 1, "hash_ids": [1, 2, 3]}
{"chat_id": 11, "parent_chat_id": -1, "timestamp": 2.0, "input_length": 16, "output_length": 5, "type": "text", "turn": 1, "hash_ids": [7]}
{"chat_id": 12, "parent_chat_id": 10, "timestamp": 9.25, "input_length": 70, "output_length": 5, "type": "text", "turn": 2, "hash_ids": [1, 2, 3, 4, 5]}
{"chat_id": 13, "parent_chat_id": 12, "timestamp": 20, "input_length": 90, "output_length": 5, "type": "text", "turn": 3, "hash_ids": [1, 2, 3, 4, 5, 6]}
)";
  auto stream = stream_of(text, TraceFormat::kBailian);
  std::vector<Request> r = read_all(*stream);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(stream->block_tokens(), 16);
  EXPECT_EQ(r[0].session_id, 10);
  EXPECT_EQ(r[1].session_id, 11);
  EXPECT_EQ(r[2].session_id, 10);
  EXPECT_EQ(r[3].session_id, 10);  // grandchild of 10
  EXPECT_EQ(r[3].turn, 3);
  EXPECT_DOUBLE_EQ(r[2].arrival_s, 9.25);
  EXPECT_EQ(r[0].block_ids, (std::vector<uint64_t>{1, 2, 3}));
}

TEST(NativeReader, LengthsFormKeepsThePrefixAndSharesItAcrossSessions) {
  // Session 1: a 300-token shared prefix + 212 new = 512 tokens; turn 1 keeps 600 of its 612-token
  // context (512 input + 100 output). Session 2 shares the prefix only.
  const char* text =
      R"({"session": 1, "turn": 0, "arrival_s": 0, "prefix": "agent", "prefix_tokens": 300, "new_tokens": 212, "output_tokens": 100, "think_s": 2.5}
{"session": 2, "turn": 0, "arrival_s": 1, "prefix": "agent", "prefix_tokens": 300, "new_tokens": 50, "output_tokens": 10}
{"session": 1, "turn": 1, "arrival_s": 4, "keep_tokens": 600, "new_tokens": 424, "output_tokens": 7, "last": true}
)";
  auto stream = stream_of(text, TraceFormat::kNative, 128);
  std::vector<Request> r = read_all(*stream);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].input_tokens, 512);
  EXPECT_EQ(r[0].block_ids.size(), 4u);
  EXPECT_DOUBLE_EQ(r[0].think_time_s, 2.5);
  EXPECT_EQ(r[1].input_tokens, 350);
  // Blocks 0-1 (tokens 0-255) are all prefix in both sessions; block 2 mixes in each session's message.
  EXPECT_EQ(r[0].block_ids[0], r[1].block_ids[0]);
  EXPECT_EQ(r[0].block_ids[1], r[1].block_ids[1]);
  EXPECT_NE(r[0].block_ids[2], r[1].block_ids[2]);
  // Turn 1: 600 kept + 424 new = 1024 tokens = 8 blocks; its first 4 are turn 0's (512 kept tokens).
  EXPECT_EQ(r[2].input_tokens, 1024);
  ASSERT_EQ(r[2].block_ids.size(), 8u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(r[2].block_ids[i], r[0].block_ids[i]) << i;
  EXPECT_EQ(r[2].session_id, 1);
  EXPECT_EQ(r[2].turn, 1);
}

TEST(NativeReader, RejectsTurnsThatDoNotFitTheSession) {
  auto message = [](const std::string& text) {
    try {
      auto stream = stream_of(text, TraceFormat::kNative);
      read_all(*stream);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string turn0 =
      R"({"session": 1, "turn": 0, "arrival_s": 0, "new_tokens": 100, "output_tokens": 10})";
  EXPECT_EQ(
      message(
          turn0 + "\n" +
          R"({"session": 1, "turn": 1, "arrival_s": 1, "keep_tokens": 111, "new_tokens": 1, "output_tokens": 1})"),
      "test.jsonl:2: field 'keep_tokens': 111 is longer than the session's context of 110 tokens "
      "(previous input + output)");
  EXPECT_EQ(message(turn0 + "\n" +
                    R"({"session": 1, "turn": 2, "arrival_s": 1, "new_tokens": 1, "output_tokens": 1})"),
            "test.jsonl:2: field 'turn': expected turn 1 of session 1, found 2");
  EXPECT_EQ(message(R"({"session": 4, "turn": 3, "arrival_s": 1, "new_tokens": 1, "output_tokens": 1})"),
            "test.jsonl:1: field 'turn': turn 3 of session 4 comes without the turns before it");
  EXPECT_EQ(message(R"({"session": 4, "turn": 0, "arrival_s": 1, "output_tokens": 1})"),
            "test.jsonl:1: field 'new_tokens': missing (or give block_ids)");
  EXPECT_EQ(
      message(
          R"({"session": 4, "turn": 0, "arrival_s": 1, "output_tokens": 1, "input_tokens": 40, "block_tokens": 16, "block_ids": [1, 2]})"),
      "test.jsonl:1: field 'block_ids': expected 3 ids for 40 tokens in blocks of 16, found 2");
}

TEST(NativeReader, AnInputPastAnyContextWindowIsAnErrorNotAnAllocation) {
  auto stream = stream_of(
      R"({"session": 1, "turn": 0, "arrival_s": 0, "new_tokens": 1000000000000, "output_tokens": 1})",
      TraceFormat::kNative, 16);
  Request r;
  EXPECT_THROW(stream->next(r), ConfigError);
}

TEST(NativeReader, ALastTurnEndsTheSessionSoItsIdCanStartAgain) {
  const char* text =
      R"({"session": 1, "turn": 0, "arrival_s": 0, "new_tokens": 100, "output_tokens": 10, "last": true}
{"session": 1, "turn": 0, "arrival_s": 5, "new_tokens": 100, "output_tokens": 10}
)";
  auto stream = stream_of(text, TraceFormat::kNative);
  EXPECT_EQ(read_all(*stream).size(), 2u);
}

TEST(TraceFormat, ParsesNamesAndDetectsFromTheFirstLine) {
  EXPECT_EQ(parse_trace_format("bailian"), TraceFormat::kBailian);
  EXPECT_THROW(parse_trace_format("csv"), ConfigError);
  std::string path = testing::temp_file("detect.jsonl", std::string("\n") + kMooncake);
  EXPECT_EQ(detect_trace_format(path), TraceFormat::kMooncake);
  std::filesystem::remove(path);
}

std::string first_error(const std::string& text, TraceFormat format, bool skip_bad_lines = false) {
  try {
    auto stream = stream_of(text, format, 0, skip_bad_lines);
    read_all(*stream);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Readers, ARequestWithoutInputIsAnErrorAtItsLine) {
  const std::string ok = R"({"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [1]})";
  EXPECT_EQ(
      first_error(ok + "\n" + R"({"timestamp": 1, "input_length": 0, "output_length": 5, "hash_ids": []})",
                  TraceFormat::kMooncake),
      "test.jsonl:2: field 'input_length': a request needs at least 1 input token (one without input "
      "does no work and never completes)");
  EXPECT_EQ(
      first_error(
          R"({"chat_id": 1, "parent_chat_id": -1, "timestamp": 0, "input_length": 0, "output_length": 5, "hash_ids": []})",
          TraceFormat::kBailian),
      "test.jsonl:1: field 'input_length': a request needs at least 1 input token (one without input does no "
      "work and never completes)");
  EXPECT_NE(first_error(R"({"session": 1, "turn": 0, "arrival_s": 0, "new_tokens": 0, "output_tokens": 5})",
                        TraceFormat::kNative)
                .find("test.jsonl:1: field 'new_tokens': a request needs at least 1 input token"),
            std::string::npos);
  EXPECT_NE(
      first_error(
          R"({"session": 1, "turn": 0, "arrival_s": 0, "output_tokens": 5, "input_tokens": 0, "block_tokens": 16, "block_ids": []})",
          TraceFormat::kNative)
          .find("test.jsonl:1: field 'input_tokens': a request needs at least 1 input token"),
      std::string::npos);
}

TEST(Readers, AnOutputPastAnyContextWindowIsAnError) {
  EXPECT_EQ(
      first_error(R"({"timestamp": 0, "input_length": 10, "output_length": 1000000000000, "hash_ids": [1]})",
                  TraceFormat::kMooncake),
      "test.jsonl:1: field 'output_length': 1000000000000 is past the 33554432-token limit");
  EXPECT_EQ(
      first_error(R"({"session": 1, "turn": 0, "arrival_s": 0, "new_tokens": 5, "output_tokens": 33554433})",
                  TraceFormat::kNative),
      "test.jsonl:1: field 'output_tokens': 33554433 is past the 33554432-token limit");
}

TEST(Readers, ABinaryFileIsAnErrorAtTheLineOfItsFirstNulEvenWhenSkippingBadLines) {
  const std::string ok = R"({"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [1]})";
  std::string text = ok + "\n" + ok + "\n" + std::string("{\"timestamp\"\0: 1}\n", 18) + ok + "\n";
  EXPECT_EQ(first_error(text, TraceFormat::kMooncake, true),
            "test.jsonl:3: a NUL byte: this is a binary file, not a JSON-lines trace");
  // All zeros and no newline (/dev/zero): found in the first chunk, not after reading gigabytes.
  EXPECT_EQ(first_error(std::string(3 << 20, '\0'), TraceFormat::kNative),
            "test.jsonl:1: a NUL byte: this is a binary file, not a JSON-lines trace");
}

TEST(Readers, ALineLongerThanTheLimitIsAnErrorAtItsLine) {
  const std::string ok = R"({"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [1]})";
  std::string too_long = ok + "\n" + std::string(kMaxLineBytes + 1, ' ') + "\n" + ok + "\n";
  EXPECT_EQ(first_error(too_long, TraceFormat::kMooncake, true),
            "test.jsonl:2: a line longer than 64 MiB: not a JSON-lines trace");
  std::string unterminated = ok + "\n" + ok + "\n" + std::string(kMaxLineBytes + 1, 'x');
  EXPECT_EQ(first_error(unterminated, TraceFormat::kMooncake),
            "test.jsonl:3: a line longer than 64 MiB: not a JSON-lines trace");
  // At the limit a line is read (here: blank, so no request).
  std::string at_limit = ok + "\n" + std::string(kMaxLineBytes, ' ') + "\n" + ok + "\n";
  EXPECT_EQ(first_error(at_limit, TraceFormat::kMooncake), "no error");
}

TEST(Readers, LocationNamesTheLineOfTheLastRequest) {
  auto stream = stream_of(kMooncake, TraceFormat::kMooncake);
  Request r;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(stream->next(r));
  EXPECT_EQ(stream->location(), "test.jsonl:4");  // line 3 is blank
}

TEST(MooncakeSample, ReadsEveryRequestOfTheSharedSample) {
  KVTIER_REQUIRE_MOONCAKE_SAMPLE();
  auto stream = open_trace(testing::kMooncakeSample, TraceReadOptions{});
  std::vector<Request> r = read_all(*stream);
  ASSERT_EQ(r.size(), 2000u);
  // The first line, as traces/README.md shows it.
  EXPECT_EQ(r[0].input_tokens, 6758);
  EXPECT_EQ(r[0].output_tokens, 500);
  EXPECT_EQ(r[0].block_ids.size(), 14u);
  int64_t blocks = 0;
  for (const Request& q : r) blocks += static_cast<int64_t>(q.block_ids.size());
  EXPECT_EQ(blocks, 54559);  // counted with Python's json module
  EXPECT_DOUBLE_EQ(r.back().arrival_s, 669.0);
}

}  // namespace
}  // namespace kvtier
