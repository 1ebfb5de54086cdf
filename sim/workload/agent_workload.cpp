#include "sim/workload/agent_workload.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <queue>
#include <sstream>
#include <tuple>

#include "sim/core/config_files.h"

namespace kvtier {
namespace {

double fraction(const ConfigNode& node, std::string_view key) {
  double value = node.number(key);
  if (!(value >= 0 && value <= 1)) node.child(key).fail("expected a fraction between 0 and 1");
  return value;
}

constexpr int64_t kMaxContextTokens = kMaxInputTokens / 2;

int64_t positive(const ConfigNode& node, std::string_view key, int64_t most) {
  int64_t value = node.integer(key);
  if (value <= 0 || value > most)
    node.child(key).fail("expected a positive integer up to " + std::to_string(most));
  return value;
}

std::string shown(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

// A count of tokens or turns. A draw is rounded and raised to at least 1, which is right for a positive
// draw that rounds to 0 but would hide a constant below 1 or a distribution that can draw a negative
// value; an unbounded one could draw more than a session can hold.
Distribution count(const ConfigNode& node, std::string_view key, int64_t most) {
  ConfigNode child = node.child(key);
  Distribution d = Distribution::parse(child);
  if (d.kind() == Distribution::Kind::kConstant && d.lowest() < 1) {
    child.fail("expected at least 1, got " + shown(d.lowest()));
  }
  if (d.lowest() < 0)
    child.fail("expected draws of at least 1, but it can draw " + shown(d.lowest()) + ": set min: 1");
  if (d.highest() > static_cast<double>(most)) {
    child.fail("expected draws of at most " + std::to_string(most) + ", but it can draw " +
               shown(d.highest()) + ": set max");
  }
  return d;
}

// A pause in seconds: never negative.
Distribution pause(const ConfigNode& node, std::string_view key) {
  ConfigNode child = node.child(key);
  Distribution d = Distribution::parse(child);
  if (d.lowest() < 0)
    child.fail("expected pauses of at least 0 s, but it can draw " + shown(d.lowest()) + ": set min: 0");
  return d;
}

// The tokens a later turn adds and the pause before it.
struct TurnGrowth {
  int64_t fresh_tokens;
  double pause_s;
};

TurnGrowth draw_growth(const AgentWorkload& w, std::mt19937_64& rng) {
  bool tool_turn = std::bernoulli_distribution(w.tool_turn_fraction)(rng);
  if (tool_turn) return {w.tool_output_tokens.sample_count(rng, 1), std::max(0.0, w.tool_time_s.sample(rng))};
  return {w.user_message_tokens.sample_count(rng, 1), std::max(0.0, w.user_think_time_s.sample(rng))};
}

}  // namespace

AgentWorkload parse_agent_workload(const ConfigNode& node, bool with_seed) {
  std::vector<std::string> keys = {"agents",
                                   "shared_prefix_tokens",
                                   "first_message_tokens",
                                   "turns_per_session",
                                   "tool_turn_fraction",
                                   "tool_output_tokens",
                                   "user_message_tokens",
                                   "output_tokens",
                                   "tool_time_s",
                                   "user_think_time_s",
                                   "reuse_fraction",
                                   "max_context_tokens",
                                   "compacted_tokens",
                                   "session_rate_per_s"};
  if (with_seed) {
    keys.emplace_back("seed");
  } else if (node.has("seed")) {
    node.child("seed").fail(
        "a scenario's seed drives its workload's generator; remove this seed and set the "
        "scenario's seed: instead");
  }
  node.allow_keys(keys);
  AgentWorkload w;
  int64_t seed = node.integer("seed", 1);
  if (seed < 0) node.child("seed").fail("expected a non-negative integer");
  w.seed = static_cast<uint64_t>(seed);
  w.agents = positive(node, "agents", kMaxAgents);
  w.shared_prefix_tokens = node.token_count("shared_prefix_tokens");
  if (w.shared_prefix_tokens < 0) node.child("shared_prefix_tokens").fail("expected a non-negative integer");
  w.first_message_tokens = count(node, "first_message_tokens", kMaxContextTokens);
  w.turns_per_session = count(node, "turns_per_session", kMaxTurnsPerSession);
  w.tool_turn_fraction = fraction(node, "tool_turn_fraction");
  w.tool_output_tokens = count(node, "tool_output_tokens", kMaxContextTokens);
  w.user_message_tokens = count(node, "user_message_tokens", kMaxContextTokens);
  w.output_tokens = count(node, "output_tokens", kMaxContextTokens);
  w.tool_time_s = pause(node, "tool_time_s");
  w.user_think_time_s = pause(node, "user_think_time_s");
  w.reuse_fraction = fraction(node, "reuse_fraction");
  // Every piece fits the context window, and the window half the reader's input limit, so that no
  // turn (a compacted context plus a new piece) can pass the limit.
  w.max_context_tokens = node.token_count("max_context_tokens");
  if (w.max_context_tokens <= 0 || w.max_context_tokens > kMaxContextTokens) {
    node.child("max_context_tokens")
        .fail("expected a positive token count up to " + std::to_string(kMaxContextTokens));
  }
  for (const char* key :
       {"first_message_tokens", "tool_output_tokens", "user_message_tokens", "output_tokens"}) {
    count(node, key, w.max_context_tokens);
  }
  w.compacted_tokens = node.token_count("compacted_tokens");
  if (w.shared_prefix_tokens + w.compacted_tokens >= w.max_context_tokens || w.compacted_tokens < 0) {
    node.child("compacted_tokens")
        .fail(
            "expected 0 <= compacted_tokens and shared_prefix_tokens + compacted_tokens < "
            "max_context_tokens");
  }
  w.session_rate_per_s = node.number("session_rate_per_s");
  if (!(w.session_rate_per_s > 0)) node.child("session_rate_per_s").fail("expected a positive rate");
  return w;
}

AgentWorkload default_agent_workload() {
  return parse_agent_workload(load_config("agent-default", "configs/workloads"));
}

AgentSessionGenerator::AgentSessionGenerator(AgentWorkload workload)
    : workload_(std::move(workload)), arrivals_(workload_.seed) {}

std::vector<NativeTurn> AgentSessionGenerator::next_session() {
  const AgentWorkload& w = workload_;
  int64_t session = next_session_++;
  clock_s_ += std::exponential_distribution<double>(w.session_rate_per_s)(arrivals_);
  std::mt19937_64 rng(mix_ids(w.seed, static_cast<uint64_t>(session)));

  int64_t agent = std::uniform_int_distribution<int64_t>(0, w.agents - 1)(rng);
  int64_t turns = w.turns_per_session.sample_count(rng, 1);
  std::vector<NativeTurn> out(static_cast<size_t>(turns));
  int64_t context = 0;  // tokens of the previous input + output
  for (int64_t t = 0; t < turns; ++t) {
    NativeTurn& turn = out[static_cast<size_t>(t)];
    turn.session = session;
    turn.turn = static_cast<int32_t>(t);
    if (t == 0) {
      turn.arrival_s = clock_s_;
      turn.prefix = "agent-" + std::to_string(agent);
      turn.prefix_tokens = w.shared_prefix_tokens;
      turn.new_tokens = w.first_message_tokens.sample_count(rng, 1);
    } else {
      TurnGrowth growth = draw_growth(w, rng);
      NativeTurn& previous = out[static_cast<size_t>(t - 1)];
      previous.think_s = growth.pause_s;  // the pause before a turn belongs to the turn before it
      turn.arrival_s = previous.arrival_s + growth.pause_s;
      if (context + growth.fresh_tokens > w.max_context_tokens) {
        turn.keep_tokens =
            w.shared_prefix_tokens;  // compaction: the prefix survives, a summary replaces the rest
        turn.new_tokens = w.compacted_tokens + growth.fresh_tokens;
      } else {
        int64_t reused = static_cast<int64_t>(std::floor(w.reuse_fraction * static_cast<double>(context)));
        turn.keep_tokens = std::max(w.shared_prefix_tokens, reused);
        turn.new_tokens = context - turn.keep_tokens + growth.fresh_tokens;
      }
    }
    turn.output_tokens = w.output_tokens.sample_count(rng, 1);
    int64_t input = turn.keep_tokens + turn.prefix_tokens + turn.new_tokens;
    context = input + turn.output_tokens;
    turn.last = t + 1 == turns;
  }
  return out;
}

AgentTraceWriter::AgentTraceWriter(const AgentWorkload& workload, int64_t requests)
    : generator_(workload), upcoming_(generator_.next_session()), requests_(requests) {}

bool AgentTraceWriter::write_next(std::ostream& out) {
  if (written_ >= requests_) return false;
  while (ready_.empty() || upcoming_.front().arrival_s <= std::get<0>(ready_.top())) open_upcoming();
  const size_t slot = std::get<2>(ready_.top());
  ready_.pop();
  Open& open = slots_[slot];
  NativeTurn& turn = open.turns[open.next++];
  if (++written_ == requests_) turn.last = true;
  write_native_turn(out, turn);
  if (open.next < open.turns.size()) {
    ready_.emplace(open.turns[open.next].arrival_s, turn.session, slot);
  } else {
    open.turns = {};
    free_slots_.push_back(slot);
  }
  return true;
}

void AgentTraceWriter::open_upcoming() {
  size_t slot = slots_.size();
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slots_.emplace_back();
  }
  ready_.emplace(upcoming_.front().arrival_s, upcoming_.front().session, slot);
  slots_[slot] = Open{std::move(upcoming_), 0};
  upcoming_ = generator_.next_session();
  ++started_;
}

int64_t write_agent_trace(const AgentWorkload& workload, int64_t requests, std::ostream& out) {
  AgentTraceWriter writer(workload, requests);
  while (writer.write_next(out)) {
  }
  return writer.sessions_started();
}

namespace {

// A stream buffer that writes the trace's next turns whenever its reader has read what it held.
class GeneratedTraceBuffer : public std::streambuf {
 public:
  GeneratedTraceBuffer(const AgentWorkload& workload, int64_t requests) : writer_(workload, requests) {}

 protected:
  int_type underflow() override {
    constexpr size_t kChunk = 64 << 10;
    lines_.str("");
    while (lines_.tellp() < static_cast<std::streamoff>(kChunk) && writer_.write_next(lines_)) {
    }
    chunk_ = lines_.str();
    if (chunk_.empty()) return traits_type::eof();
    setg(chunk_.data(), chunk_.data(), chunk_.data() + chunk_.size());
    return traits_type::to_int_type(chunk_.front());
  }

 private:
  AgentTraceWriter writer_;
  std::ostringstream lines_;
  std::string chunk_;
};

class GeneratedTraceStream : public std::istream {
 public:
  GeneratedTraceStream(const AgentWorkload& workload, int64_t requests)
      : std::istream(nullptr), buffer_(workload, requests) {
    rdbuf(&buffer_);
  }

 private:
  GeneratedTraceBuffer buffer_;
};

}  // namespace

std::unique_ptr<std::istream> agent_trace_stream(const AgentWorkload& workload, int64_t requests) {
  return std::make_unique<GeneratedTraceStream>(workload, requests);
}

}  // namespace kvtier
