// The synthetic coding-agent workload: seeded sessions of turns whose context grows by tool results and
// user messages on top of a shared system prompt and tool-schema prefix.
//
// A session belongs to one of `agents` agents and starts with that agent's shared prefix plus a first
// user message. Each later turn is a tool result (with probability tool_turn_fraction) or a user
// message; it keeps `reuse_fraction` of the previous context (input + output) as its prefix, re-renders
// the rest, and appends the new tokens, so contexts grow to tens or hundreds of thousands of tokens.
// A context that would pass max_context_tokens is compacted to the shared prefix plus a summary. The
// pause before a turn is the tool's run time or the user's think time. Sessions start as a Poisson
// process (open-loop timestamps); closed-loop replay ignores those and paces turns by completions.
//
// parse_agent_workload() reads the `workload` mapping of a scenario (configs/workloads/agent-default.yaml
// is the built-in default, with the source of each number); docs/traces.md lists every key.
#pragma once

#include <cstdint>
#include <functional>
#include <istream>
#include <memory>
#include <ostream>
#include <queue>
#include <random>
#include <tuple>
#include <vector>

#include "sim/core/config.h"
#include "sim/workload/distribution.h"
#include "sim/workload/native_format.h"

namespace kvtier {

// Bounds on what a workload may ask for: a session is drawn whole, and its turns are held in memory.
inline constexpr int64_t kMaxTurnsPerSession = 100000;
inline constexpr int64_t kMaxAgents = int64_t{1} << 20;

struct AgentWorkload {
  uint64_t seed = 1;
  int64_t agents = 1;
  int64_t shared_prefix_tokens = 0;
  Distribution first_message_tokens = Distribution::constant(0);
  Distribution turns_per_session = Distribution::constant(1);
  double tool_turn_fraction = 0;
  Distribution tool_output_tokens = Distribution::constant(0);
  Distribution user_message_tokens = Distribution::constant(0);
  Distribution output_tokens = Distribution::constant(0);
  Distribution tool_time_s = Distribution::constant(0);
  Distribution user_think_time_s = Distribution::constant(0);
  double reuse_fraction = 1;
  int64_t max_context_tokens = 0;
  int64_t compacted_tokens = 0;
  double session_rate_per_s = 1;
};

// Reads a workload mapping; every key is required except `seed` (default 1), which only a workload used on
// its own may give (with_seed: inside a scenario, the scenario's seed drives it). Throws ConfigError with the
// file, line, key and what was expected: token counts must draw at least 1 and at most
// max_context_tokens (itself at most half the reader's input limit), turns at least 1 and at most
// kMaxTurnsPerSession, pauses at least 0.
AgentWorkload parse_agent_workload(const ConfigNode& node, bool with_seed = true);
// The built-in default (configs/workloads/agent-default.yaml).
AgentWorkload default_agent_workload();

// Draws sessions one after another. Session i depends only on the seed and i, so two consumers that
// draw the same sessions see the same turns however they interleave other work.
class AgentSessionGenerator {
 public:
  explicit AgentSessionGenerator(AgentWorkload workload);

  // The next session's turns, in the lengths form, with arrival times from the session start clock.
  std::vector<NativeTurn> next_session();
  const AgentWorkload& workload() const { return workload_; }

 private:
  AgentWorkload workload_;
  int64_t next_session_ = 0;
  double clock_s_ = 0;
  std::mt19937_64 arrivals_;
};

// The first `requests` turns (in arrival order) of the generator's sessions as a native trace, a turn at a
// time; a session cut off by the limit is written up to the limit, its last turn marked. A session is
// drawn only once the trace reaches its start, so memory holds the open sessions, not the trace.
class AgentTraceWriter {
 public:
  AgentTraceWriter(const AgentWorkload& workload, int64_t requests);
  // Writes the next turn's line; false once `requests` turns are written.
  bool write_next(std::ostream& out);
  int64_t sessions_started() const { return started_; }

 private:
  struct Open {
    std::vector<NativeTurn> turns;
    size_t next = 0;
  };
  using Entry = std::tuple<double, int64_t, size_t>;  // next arrival, session (ties), slot
  void open_upcoming();

  AgentSessionGenerator generator_;
  std::vector<NativeTurn> upcoming_;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> ready_;
  std::vector<Open> slots_;
  std::vector<size_t> free_slots_;
  int64_t requests_;
  int64_t written_ = 0;
  int64_t started_ = 0;
};

// Writes the whole trace of AgentTraceWriter; returns the number of sessions started.
int64_t write_agent_trace(const AgentWorkload& workload, int64_t requests, std::ostream& out);
// The same trace as a stream that writes its text as it is read: a reader of a long trace holds a chunk
// of it at a time.
std::unique_ptr<std::istream> agent_trace_stream(const AgentWorkload& workload, int64_t requests);

}  // namespace kvtier
