#include "sim/workload/trace_stats.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "sim/workload/test_util.h"

namespace kvtier {
namespace {

using testing::stream_of;

// The definition of trace_stats.h, one lookup per block: the leading run of ids seen before; reuse gaps for
// every hit block, from a map of last uses.
struct Reference {
  int64_t blocks = 0, hits = 0, tokens = 0, hit_tokens = 0;
  std::vector<double> gaps;
};

Reference reference_stats(const std::vector<Request>& requests, int64_t block_tokens) {
  Reference ref;
  std::set<uint64_t> seen;
  std::map<uint64_t, double> last_use;
  for (const Request& r : requests) {
    size_t hit = 0;
    while (hit < r.block_ids.size() && seen.count(r.block_ids[hit])) ++hit;
    for (size_t i = 0; i < r.block_ids.size(); ++i) {
      if (i < hit) ref.gaps.push_back(r.arrival_s - last_use[r.block_ids[i]]);
      last_use[r.block_ids[i]] = r.arrival_s;
      seen.insert(r.block_ids[i]);
    }
    ref.blocks += static_cast<int64_t>(r.block_ids.size());
    ref.hits += static_cast<int64_t>(hit);
    ref.tokens += r.input_tokens;
    ref.hit_tokens += std::min<int64_t>(r.input_tokens, static_cast<int64_t>(hit) * block_tokens);
  }
  return ref;
}

TEST(TraceStats, HandComputedSmallTrace) {
  // r0 [1 2 3] at 0 s: no hit. r1 [1 2 4] at 10 s: hits 1, 2 (last used 10 s before). r2 [1 5] at
  // 100 s: hits 1 (90 s after r1). r3 [6 2] at 101 s: 6 is new, so nothing hits although 2 was seen
  // (and 2 after 6 breaks the prefix property).
  const char* text =
      R"({"timestamp": 0, "input_length": 1500, "output_length": 10, "hash_ids": [1, 2, 3]}
{"timestamp": 10000, "input_length": 1400, "output_length": 30, "hash_ids": [1, 2, 4]}
{"timestamp": 100000, "input_length": 600, "output_length": 20, "hash_ids": [1, 5]}
{"timestamp": 101000, "input_length": 1000, "output_length": 40, "hash_ids": [6, 2]}
)";
  auto stream = stream_of(text, TraceFormat::kMooncake);
  TraceStats s = compute_trace_stats(*stream, {.reuse_sampling = 1});
  EXPECT_EQ(s.requests, 4);
  EXPECT_DOUBLE_EQ(s.duration_s, 101);
  EXPECT_EQ(s.total_blocks, 10);
  EXPECT_EQ(s.unique_blocks, 7);  // 1 2 3 4 5 6, and 2 again below 6
  EXPECT_EQ(s.hit_blocks, 3);
  EXPECT_DOUBLE_EQ(s.block_hit_rate(), 0.3);
  EXPECT_EQ(s.total_tokens, 4500);
  EXPECT_EQ(s.hit_tokens, 1024 + 512);
  EXPECT_EQ(s.input_tokens.p50, 1000);  // nearest rank: 2nd of 600 1000 1400 1500
  EXPECT_EQ(s.input_tokens.max, 1500);
  EXPECT_DOUBLE_EQ(s.output_tokens.mean, 25);
  EXPECT_EQ(s.reuse[2].blocks, 2);  // 10-60 s: blocks 1 and 2 of r1
  EXPECT_EQ(s.reuse[3].blocks, 1);  // 1-10 min: block 1 of r2
  EXPECT_EQ(s.sessions, 0);
}

// compute_trace_stats reads one request ahead of the one it adds: the first and last requests, and a bad
// line after good ones, must come out as without the read-ahead.
TEST(TraceStats, EmptyOneRequestAndBadLastLineTraces) {
  TraceStats empty = compute_trace_stats(*stream_of("", TraceFormat::kMooncake));
  EXPECT_EQ(empty.requests, 0);
  EXPECT_EQ(empty.total_blocks, 0);
  EXPECT_DOUBLE_EQ(empty.duration_s, 0);

  const char* one_line =
      R"({"timestamp": 5, "input_length": 1100, "output_length": 7, "hash_ids": [4, 5, 6]})";
  TraceStats one = compute_trace_stats(*stream_of(one_line, TraceFormat::kMooncake));
  EXPECT_EQ(one.requests, 1);
  EXPECT_EQ(one.total_blocks, 3);
  EXPECT_EQ(one.unique_blocks, 3);
  EXPECT_EQ(one.hit_blocks, 0);
  EXPECT_EQ(one.input_tokens.p99, 1100);
  EXPECT_EQ(one.output_tokens.max, 7);

  std::string bad_last = std::string(one_line) + "\n{\"timestamp\": 6}\n";
  EXPECT_THROW(compute_trace_stats(*stream_of(bad_last, TraceFormat::kMooncake)), ConfigError);
}

// Random traces of prefix chains: requests extend or branch earlier requests' chains.
std::vector<Request> random_prefix_trace(uint64_t seed, int requests) {
  std::mt19937_64 rng(seed);
  std::vector<std::vector<uint64_t>> chains;
  std::vector<Request> out;
  uint64_t next_id = 1;
  for (int i = 0; i < requests; ++i) {
    std::vector<uint64_t> ids;
    if (!chains.empty() && rng() % 4 != 0) {
      const std::vector<uint64_t>& base = chains[rng() % chains.size()];
      ids.assign(base.begin(), base.begin() + static_cast<long>(rng() % (base.size() + 1)));
    }
    for (uint64_t extra = rng() % 40; extra > 0; --extra) ids.push_back(next_id++);
    if (ids.empty()) ids.push_back(next_id++);
    Request r;
    r.arrival_s = i * 0.7;
    r.block_ids = ids;
    r.input_tokens = static_cast<int64_t>(ids.size()) * 512 - static_cast<int64_t>(rng() % 512);
    chains.push_back(ids);
    out.push_back(r);
  }
  return out;
}

std::string as_mooncake(const std::vector<Request>& requests) {
  std::string text;
  for (const Request& r : requests) {
    text += "{\"timestamp\": " + std::to_string(static_cast<int64_t>(r.arrival_s * 1000 + 0.5)) +
            ", \"input_length\": " + std::to_string(r.input_tokens) +
            ", \"output_length\": 1, \"hash_ids\": [";
    for (size_t i = 0; i < r.block_ids.size(); ++i) text += (i ? ", " : "") + std::to_string(r.block_ids[i]);
    text += "]}\n";
  }
  return text;
}

TEST(TraceStats, MatchesTheOneLookupPerBlockReferenceOnRandomPrefixTraces) {
  for (uint64_t seed : {1, 2, 3}) {
    std::vector<Request> trace = random_prefix_trace(seed, 3000);
    for (Request& r : trace)
      r.arrival_s = static_cast<double>(static_cast<int64_t>(r.arrival_s * 1000 + 0.5)) / 1000;
    Reference ref = reference_stats(trace, 512);
    auto stream = stream_of(as_mooncake(trace), TraceFormat::kMooncake);
    TraceStats s = compute_trace_stats(*stream, {.reuse_sampling = 1});
    EXPECT_EQ(s.total_blocks, ref.blocks) << seed;
    EXPECT_EQ(s.hit_blocks, ref.hits) << seed;
    EXPECT_EQ(s.hit_tokens, ref.hit_tokens) << seed;
    EXPECT_EQ(s.prefix_violations, 0) << seed;
    int64_t counted = 0;
    for (const ReuseBucket& b : s.reuse) counted += b.blocks;
    EXPECT_EQ(counted, static_cast<int64_t>(ref.gaps.size())) << seed;
    int64_t under_10s = std::count_if(ref.gaps.begin(), ref.gaps.end(), [](double g) { return g < 10; });
    EXPECT_EQ(s.reuse[0].blocks + s.reuse[1].blocks, under_10s) << seed;
  }
}

TEST(TraceStats, SampledReuseTimesFollowAboutOneBlockIn64) {
  std::vector<Request> trace = random_prefix_trace(9, 3000);
  Reference ref = reference_stats(trace, 512);
  auto stream = stream_of(as_mooncake(trace), TraceFormat::kMooncake);
  TraceStats s = compute_trace_stats(*stream, {.reuse_sampling = 64});
  int64_t counted = 0;
  for (const ReuseBucket& b : s.reuse) counted += b.blocks;
  double expected = static_cast<double>(ref.gaps.size()) / 64;
  EXPECT_NEAR(static_cast<double>(counted), expected, 5 * std::sqrt(expected));
  EXPECT_THROW(compute_trace_stats(*stream_of("", TraceFormat::kMooncake), {.reuse_sampling = 3}),
               ConfigError);
}

TEST(TraceStats, SessionTracesReportContextGrowthPerTurn) {
  const char* text =
      R"({"session": 1, "turn": 0, "arrival_s": 0, "new_tokens": 1000, "output_tokens": 100}
{"session": 1, "turn": 1, "arrival_s": 1, "keep_tokens": 1100, "new_tokens": 400, "output_tokens": 100}
{"session": 2, "turn": 0, "arrival_s": 2, "new_tokens": 3000, "output_tokens": 100}
{"session": 1, "turn": 2, "arrival_s": 3, "keep_tokens": 1600, "new_tokens": 900, "output_tokens": 100}
)";
  auto stream = stream_of(text, TraceFormat::kNative);
  TraceStats s = compute_trace_stats(*stream, {.reuse_sampling = 1});
  EXPECT_EQ(s.sessions, 2);
  EXPECT_EQ(s.growth_samples, 2);
  EXPECT_DOUBLE_EQ(s.mean_growth_tokens, (500.0 + 1000.0) / 2);  // 1000 -> 1500 -> 2500
  ASSERT_EQ(s.growth.size(), 3u);                                // turns 0, 1, 2-3
  EXPECT_DOUBLE_EQ(s.growth[0].mean_input_tokens, 2000);
  EXPECT_EQ(s.growth[2].first_turn, 2);
  EXPECT_EQ(s.growth[2].last_turn, 3);
  // Turn 1 (1500 tokens) hits turn 0's three full 256-token blocks: turn 0's fourth block was partial
  // (768-999) and turn 1's fourth also holds the output (768-1023). Likewise turn 2 hits turn 1's five
  // full blocks but not its partial sixth.
  EXPECT_EQ(s.hit_blocks, 3 + 5);
}

// A native trace of interleaved sessions in the lengths form (contexts cut anywhere, kept whole or
// dropped, sessions ended with `last` and their ids started again), with block-ids turns mixed into
// the same sessions: the cases in which a turn's shared prefix with its session's previous request
// is known, and those in which it is not.
std::string random_native_trace(uint64_t seed, int lines) {
  std::mt19937_64 rng(seed);
  struct Open {
    int32_t next_turn = 0;
    int64_t context = 0;
  };
  std::map<int64_t, Open> open;
  std::string text;
  int64_t next_session = 0;
  for (int i = 0; i < lines; ++i) {
    std::string line = "{\"arrival_s\": " + std::to_string(i) + ", ";
    if (open.empty() || rng() % 5 == 0) {
      int64_t session = rng() % 4 == 0 ? static_cast<int64_t>(rng() % (next_session + 1)) : next_session;
      if (session == next_session) ++next_session;
      if (open.count(session)) continue;
      int64_t prefix = rng() % 2 ? static_cast<int64_t>(rng() % 3) * 300 : 0;
      int64_t fresh = 1 + static_cast<int64_t>(rng() % 3000), output = static_cast<int64_t>(rng() % 700);
      line += "\"session\": " + std::to_string(session) + ", \"turn\": 0, ";
      if (prefix > 0) line += "\"prefix\": \"p\", \"prefix_tokens\": " + std::to_string(prefix) + ", ";
      line += "\"new_tokens\": " + std::to_string(fresh) + ", \"output_tokens\": " + std::to_string(output);
      open[session] = {1, prefix + fresh + output};
    } else {
      auto it = open.begin();
      std::advance(it, static_cast<long>(rng() % open.size()));
      Open& s = it->second;
      line +=
          "\"session\": " + std::to_string(it->first) + ", \"turn\": " + std::to_string(s.next_turn) + ", ";
      int64_t output = static_cast<int64_t>(rng() % 700);
      if (rng() % 8 == 0) {  // the block-ids form: the session's context does not see this turn
        int64_t blocks = 1 + static_cast<int64_t>(rng() % 20);
        line += "\"input_tokens\": " + std::to_string(blocks * 128) + ", \"block_tokens\": 128, ";
        line += "\"output_tokens\": " + std::to_string(output) + ", \"block_ids\": [";
        for (int64_t b = 0; b < blocks; ++b) line += (b ? ", " : "") + std::to_string(rng() % 50);
        line += "]";
      } else {
        uint64_t pick = rng() % 4;
        int64_t keep = pick == 0   ? s.context
                       : pick == 1 ? 0
                                   : s.context - static_cast<int64_t>(rng() % (s.context / 4 + 1));
        int64_t fresh =
            keep == 0 ? 1 + static_cast<int64_t>(rng() % 3000) : static_cast<int64_t>(rng() % 3000);
        line += "\"keep_tokens\": " + std::to_string(keep) + ", \"new_tokens\": " + std::to_string(fresh) +
                ", \"output_tokens\": " + std::to_string(output);
        s.context = keep + fresh + output;
        ++s.next_turn;
      }
      if (rng() % 20 == 0) {
        line += ", \"last\": true";
        open.erase(it);
      }
    }
    text += line + "}\n";
  }
  return text;
}

TEST(TraceStats, ReadersClaimNoMoreSharedIdsThanTurnsReallyShare) {
  for (uint64_t seed : {1, 2, 3}) {
    auto stream = stream_of(random_native_trace(seed, 4000), TraceFormat::kNative);
    std::map<int64_t, std::vector<uint64_t>> previous;  // session -> its latest request's ids
    Request r;
    int64_t claimed = 0, requests = 0;
    while (stream->next(r)) {
      ++requests;
      auto found = previous.find(r.session_id);
      size_t shared = 0;
      if (found != previous.end()) {
        const std::vector<uint64_t>& p = found->second;
        while (shared < std::min(p.size(), r.block_ids.size()) && p[shared] == r.block_ids[shared]) ++shared;
      }
      ASSERT_LE(r.same_as_previous_turn, shared) << "seed " << seed << ", request " << r.id;
      claimed += r.same_as_previous_turn > 0;
      previous[r.session_id] = r.block_ids;
    }
    EXPECT_GT(claimed, requests / 3) << seed;  // the known prefixes are in use
  }
}

// Clears what the reader knows of shared prefixes: the statistics must come out the same without it.
class ForgetfulStream : public RequestStream {
 public:
  explicit ForgetfulStream(std::unique_ptr<RequestStream> inner) : inner_(std::move(inner)) {}
  bool next(Request& out) override {
    if (!inner_->next(out)) return false;
    out.same_as_previous_turn = 0;
    return true;
  }
  int64_t skipped_lines() const override { return inner_->skipped_lines(); }
  int64_t block_tokens() const override { return inner_->block_tokens(); }
  std::string location() const override { return inner_->location(); }

 private:
  std::unique_ptr<RequestStream> inner_;
};

void expect_same_stats(const TraceStats& a, const TraceStats& b) {
  EXPECT_EQ(a.requests, b.requests);
  EXPECT_EQ(a.sessions, b.sessions);
  EXPECT_EQ(a.total_blocks, b.total_blocks);
  EXPECT_EQ(a.unique_blocks, b.unique_blocks);
  EXPECT_EQ(a.hit_blocks, b.hit_blocks);
  EXPECT_EQ(a.hit_tokens, b.hit_tokens);
  EXPECT_EQ(a.prefix_violations, b.prefix_violations);
  EXPECT_EQ(a.growth_samples, b.growth_samples);
  EXPECT_EQ(a.mean_growth_tokens, b.mean_growth_tokens);
  ASSERT_EQ(a.reuse.size(), b.reuse.size());
  for (size_t i = 0; i < a.reuse.size(); ++i) EXPECT_EQ(a.reuse[i].blocks, b.reuse[i].blocks) << i;
  ASSERT_EQ(a.growth.size(), b.growth.size());
  for (size_t i = 0; i < a.growth.size(); ++i) {
    EXPECT_EQ(a.growth[i].requests, b.growth[i].requests) << i;
    EXPECT_EQ(a.growth[i].mean_input_tokens, b.growth[i].mean_input_tokens) << i;
  }
}

TEST(TraceStats, KnownSharedPrefixesChangeNoStatistic) {
  for (uint64_t seed : {4, 5}) {
    std::string text = random_native_trace(seed, 6000);
    for (int64_t block_tokens : {16, 256}) {
      for (int64_t sampling : {1, 4, 64}) {
        TraceStats fast = compute_trace_stats(*stream_of(text, TraceFormat::kNative, block_tokens),
                                              {.reuse_sampling = sampling});
        ForgetfulStream forgetful(stream_of(text, TraceFormat::kNative, block_tokens));
        TraceStats slow = compute_trace_stats(forgetful, {.reuse_sampling = sampling});
        SCOPED_TRACE("seed " + std::to_string(seed) + ", blocks of " + std::to_string(block_tokens) +
                     ", sampling " + std::to_string(sampling));
        EXPECT_GT(fast.hit_blocks, 0);
        expect_same_stats(fast, slow);
      }
    }
  }
}

TEST(TraceStats, MooncakeSampleMatchesTheReference) {
  KVTIER_REQUIRE_MOONCAKE_SAMPLE();
  auto stream = open_trace(testing::kMooncakeSample, TraceReadOptions{});
  TraceStats s = compute_trace_stats(*stream, {.reuse_sampling = 1});
  // Computed independently with Python's json module and a set (the definition of trace_stats.h).
  EXPECT_EQ(s.requests, 2000);
  EXPECT_EQ(s.total_blocks, 54559);
  EXPECT_EQ(s.unique_blocks, 38788);
  EXPECT_EQ(s.hit_blocks, 15771);
  EXPECT_NEAR(s.token_hit_rate(), 0.29411214449911294, 1e-12);
  EXPECT_EQ(s.input_tokens.p50, 7963);
  EXPECT_EQ(s.input_tokens.p90, 29448);
  EXPECT_EQ(s.input_tokens.p99, 98812);
  EXPECT_DOUBLE_EQ(s.duration_s, 669);
  EXPECT_EQ(s.prefix_violations, 0);
}

}  // namespace
}  // namespace kvtier
