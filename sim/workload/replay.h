// Replay drivers: the one interface through which the analytic cache replay and the SimGrid serving
// engine receive requests and report completions.
//
// An engine loop asks next_ready_time(); when a time comes back it advances its clock there (or serves
// what it has until then) and calls pop_ready(); when a request finishes it calls on_complete(). Open
// loop issues a trace's requests at their timestamps (scaled by a rate multiplier, cut to a window) and
// ignores completions. Closed loop keeps N sessions in flight: a session's next turn is ready when its
// previous turn completes plus the turn's think/tool time, and a finished session is replaced by a new
// one, until the window closes (the AMD seed's method: a 20-minute replay whose goodput is the requests
// completed inside the window). Both are deterministic for their inputs.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/workload/agent_workload.h"
#include "sim/workload/request.h"
#include "sim/workload/trace_reader.h"

namespace kvtier {

struct ReplayCounts {
  int64_t issued = 0;
  int64_t completed = 0;
  int64_t completed_in_window = 0;  // goodput: completions no later than the window's end
};

class ReplayDriver {
 public:
  virtual ~ReplayDriver() = default;
  // The earliest time at which a request is ready to issue, or nullopt when none is ready until a
  // completion arrives (closed loop) or the replay is over.
  virtual std::optional<double> next_ready_time() const = 0;
  // The request with the earliest ready time; its id is unique within the replay and its arrival_s is
  // the ready time. REQUIRES: next_ready_time() has a value.
  virtual Request pop_ready() = 0;
  // REQUIRES: request_id came from pop_ready() and was not completed before; now >= its ready time.
  virtual void on_complete(uint64_t request_id, double now) = 0;
  // The request was rejected, never served (see on_complete's REQUIRES). A replay counts it as done.
  virtual void on_reject(uint64_t request_id, double now) { on_complete(request_id, now); }
  // No request is ready, none will become ready, and none is in flight.
  virtual bool done() const = 0;
  virtual ReplayCounts counts() const = 0;
};

struct OpenLoopOptions {
  double rate_multiplier = 1;  // 2 replays the trace twice as fast
  double start_s = 0;          // the window, in trace time: [start_s, start_s + duration_s)
  double duration_s = std::numeric_limits<double>::infinity();
};

// Replay time is (arrival - start_s) / rate_multiplier. Throws ConfigError for a non-positive rate or
// negative window, and (from pop_ready) when the trace is not sorted by time, naming the file and line.
std::unique_ptr<ReplayDriver> make_open_loop(std::unique_ptr<RequestStream> stream, OpenLoopOptions options);

// A session: its turns in order, block ids in the replay's block size, think_time_s after each turn.
struct Session {
  int64_t id = 0;
  std::vector<Request> turns;
};

class SessionSource {
 public:
  virtual ~SessionSource() = default;
  virtual bool next(Session& out) = 0;  // false when there are no more sessions
};

// Sessions drawn from the synthetic generator, materialised in `block_tokens` blocks; never runs out.
std::unique_ptr<SessionSource> make_generated_sessions(const AgentWorkload& workload, int64_t block_tokens);
// Sessions of a trace, in order of their first turn. Once all are used they are replayed again with
// their block ids salted by the round, so a replayed session does not hit the cache of its first run
// (shared prefixes included). REQUIRES: sessions is not empty.
std::unique_ptr<SessionSource> make_trace_sessions(std::vector<Session> sessions);

// Groups a trace into sessions (held in memory: closed-loop traces such as the seed's 739 sessions are
// small). Native traces give think times; Mooncake and Bailian do not, so the pause after a turn is
// taken as the gap to the next turn's arrival (an upper bound: it includes the response time). Requests
// without a session become one-turn sessions.
std::vector<Session> load_sessions(const std::string& path, const TraceReadOptions& options);

struct ClosedLoopOptions {
  int64_t concurrency = 1;   // sessions in flight
  double duration_s = 1200;  // the window: turns become ready only before it closes (20 minutes)
};

// Throws ConfigError for concurrency < 1 or a non-positive duration.
std::unique_ptr<ReplayDriver> make_closed_loop(std::unique_ptr<SessionSource> sessions,
                                               ClosedLoopOptions options);

// One turn as a recorded closed-loop run issued it: turn `turn` of the `session`-th session it started,
// at `arrival_s` on the run's clock.
struct RecordedTurn {
  int64_t session = 0;
  int32_t turn = 0;
  double arrival_s = 0;
};

// A closed loop's sessions issued at the times a recorded run issued them (kvtier validate replays a
// hardware run's arrivals this way, so that the cache sees the same requests in the same order whatever
// the predicted timing): session k is the k-th session `sessions` yields, as make_closed_loop numbers
// them, and each recorded turn is issued at its arrival_s, in order of arrival (the record's order among
// equal times). Completions count in the window as in make_closed_loop; they issue nothing. Throws
// ConfigError for a non-positive duration, a turn recorded twice, and (from pop_ready) for a turn its
// session does not have.
std::unique_ptr<ReplayDriver> make_recorded_closed_loop(std::unique_ptr<SessionSource> sessions,
                                                        std::vector<RecordedTurn> turns, double duration_s);

}  // namespace kvtier
