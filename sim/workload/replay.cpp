#include "sim/workload/replay.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <set>
#include <stdexcept>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

namespace kvtier {
namespace {

class OpenLoop : public ReplayDriver {
 public:
  OpenLoop(std::unique_ptr<RequestStream> stream, OpenLoopOptions options)
      : stream_(std::move(stream)), options_(options) {
    advance();
  }

  std::optional<double> next_ready_time() const override {
    if (!has_next_) return std::nullopt;
    return next_.arrival_s;
  }

  Request pop_ready() override {
    if (!has_next_) throw std::logic_error("pop_ready() with no request ready");
    Request out = std::move(next_);
    out.id = counts_.issued++;
    advance();
    return out;
  }

  void on_complete(uint64_t, double) override {
    ++counts_.completed;
    ++counts_.completed_in_window;
  }

  bool done() const override { return !has_next_ && counts_.completed == counts_.issued; }
  ReplayCounts counts() const override { return counts_; }

 private:
  // Reads up to the next request inside the window, in replay time.
  void advance() {
    has_next_ = false;
    double end = options_.start_s + options_.duration_s;
    while (stream_->next(next_)) {
      if (next_.arrival_s < last_arrival_) {
        throw ConfigError(stream_->location() + ": open-loop replay needs a trace sorted by time: request " +
                          std::to_string(next_.id) + " arrives at " + std::to_string(next_.arrival_s) +
                          " s, before the one before it (" + std::to_string(last_arrival_) + " s)");
      }
      last_arrival_ = next_.arrival_s;
      if (next_.arrival_s < options_.start_s) continue;
      if (next_.arrival_s >= end) return;
      next_.arrival_s = (next_.arrival_s - options_.start_s) / options_.rate_multiplier;
      has_next_ = true;
      return;
    }
  }

  std::unique_ptr<RequestStream> stream_;
  OpenLoopOptions options_;
  Request next_;
  bool has_next_ = false;
  double last_arrival_ = 0;
  ReplayCounts counts_;
};

// The next session of `sessions` with turns, numbered from `started` on (both closed loops number
// sessions this way, so that a recorded run's session k is the replay's); false when there are none.
bool next_numbered_session(SessionSource& sessions, int64_t& started, Session& out) {
  while (sessions.next(out)) {
    if (out.turns.empty()) continue;
    out.id = started++;
    return true;
  }
  return false;
}

class ClosedLoop : public ReplayDriver {
 public:
  ClosedLoop(std::unique_ptr<SessionSource> sessions, ClosedLoopOptions options)
      : sessions_(std::move(sessions)), options_(options), slots_(static_cast<size_t>(options.concurrency)) {
    for (size_t slot = 0; slot < slots_.size(); ++slot) start_session(slot, 0.0);
  }

  std::optional<double> next_ready_time() const override {
    if (ready_.empty() || std::get<0>(ready_.top()) >= options_.duration_s) return std::nullopt;
    return std::get<0>(ready_.top());
  }

  Request pop_ready() override {
    if (!next_ready_time()) throw std::logic_error("pop_ready() with no request ready");
    auto [time, order, slot] = ready_.top();
    ready_.pop();
    Slot& s = slots_[slot];
    Request out = s.session.turns[s.next_turn++];
    out.id = static_cast<uint64_t>(counts_.issued++);
    out.arrival_s = time;
    out.session_id = s.session.id;
    in_flight_.emplace(out.id, slot);
    return out;
  }

  void on_complete(uint64_t request_id, double now) override {
    auto found = in_flight_.find(request_id);
    if (found == in_flight_.end()) throw std::logic_error("on_complete() for a request not in flight");
    size_t slot = found->second;
    in_flight_.erase(found);
    ++counts_.completed;
    if (now <= options_.duration_s) ++counts_.completed_in_window;
    Slot& s = slots_[slot];
    if (s.next_turn < s.session.turns.size()) {
      ready_.emplace(now + s.session.turns[s.next_turn - 1].think_time_s, order_++, slot);
    } else {
      start_session(slot, now);  // a finished session is replaced at once
    }
  }

  bool done() const override { return in_flight_.empty() && !next_ready_time(); }
  ReplayCounts counts() const override { return counts_; }

 private:
  struct Slot {
    Session session;
    size_t next_turn = 0;
  };

  void start_session(size_t slot, double now) {
    Slot& s = slots_[slot];
    s.next_turn = 0;
    if (next_numbered_session(*sessions_, sessions_started_, s.session)) ready_.emplace(now, order_++, slot);
  }

  using Entry = std::tuple<double, uint64_t, size_t>;  // ready time, order of readiness (ties), slot
  std::unique_ptr<SessionSource> sessions_;
  ClosedLoopOptions options_;
  std::vector<Slot> slots_;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> ready_;
  std::unordered_map<uint64_t, size_t> in_flight_;
  uint64_t order_ = 0;
  int64_t sessions_started_ = 0;
  ReplayCounts counts_;
};

class RecordedClosedLoop : public ReplayDriver {
 public:
  RecordedClosedLoop(std::unique_ptr<SessionSource> sessions, std::vector<RecordedTurn> turns,
                     double duration_s)
      : sessions_(std::move(sessions)), turns_(std::move(turns)), duration_s_(duration_s) {
    std::stable_sort(turns_.begin(), turns_.end(),
                     [](const RecordedTurn& a, const RecordedTurn& b) { return a.arrival_s < b.arrival_s; });
    std::set<std::pair<int64_t, int32_t>> seen;
    for (const RecordedTurn& t : turns_) {
      if (!seen.emplace(t.session, t.turn).second) {
        throw ConfigError("recorded arrivals: session " + std::to_string(t.session) + " turn " +
                          std::to_string(t.turn) + " is recorded twice");
      }
      ++turns_left_[t.session];
    }
  }

  std::optional<double> next_ready_time() const override {
    if (next_ == turns_.size()) return std::nullopt;
    return turns_[next_].arrival_s;
  }

  Request pop_ready() override {
    if (next_ == turns_.size()) throw std::logic_error("pop_ready() with no request ready");
    const RecordedTurn& t = turns_[next_++];
    Session& session = session_of(t.session);
    auto turn = std::find_if(session.turns.begin(), session.turns.end(),
                             [&](const Request& r) { return r.turn == t.turn; });
    if (turn == session.turns.end()) {
      throw ConfigError("recorded arrivals: session " + std::to_string(t.session) + " has no turn " +
                        std::to_string(t.turn) + " (" + std::to_string(session.turns.size()) + " turns)");
    }
    Request out = *turn;
    out.id = static_cast<uint64_t>(counts_.issued++);
    out.arrival_s = t.arrival_s;
    out.session_id = t.session;
    if (--turns_left_[t.session] == 0) drawn_.erase(t.session);
    in_flight_.insert(out.id);
    return out;
  }

  void on_complete(uint64_t request_id, double now) override {
    if (in_flight_.erase(request_id) == 0)
      throw std::logic_error("on_complete() for a request not in flight");
    ++counts_.completed;
    if (now <= duration_s_) ++counts_.completed_in_window;
  }

  bool done() const override { return in_flight_.empty() && next_ == turns_.size(); }
  ReplayCounts counts() const override { return counts_; }

 private:
  // The session-th session the source yields (numbered as ClosedLoop numbers them), drawn on demand.
  Session& session_of(int64_t session) {
    while (sessions_started_ <= session) {
      Session s;
      if (!next_numbered_session(*sessions_, sessions_started_, s)) {
        throw ConfigError("recorded arrivals: session " + std::to_string(session) +
                          ", but the workload has " + std::to_string(sessions_started_) + " sessions");
      }
      if (turns_left_.contains(s.id)) drawn_.emplace(s.id, std::move(s));
    }
    auto found = drawn_.find(session);
    if (found == drawn_.end())
      throw std::logic_error("recorded arrivals: a session issued after its last turn");
    return found->second;
  }

  std::unique_ptr<SessionSource> sessions_;
  std::vector<RecordedTurn> turns_;
  double duration_s_;
  size_t next_ = 0;
  std::unordered_map<int64_t, size_t> turns_left_;  // per session: recorded turns not issued yet
  std::unordered_map<int64_t, Session> drawn_;      // sessions with turns left to issue
  int64_t sessions_started_ = 0;
  std::unordered_set<uint64_t> in_flight_;
  ReplayCounts counts_;
};

}  // namespace

std::unique_ptr<ReplayDriver> make_open_loop(std::unique_ptr<RequestStream> stream, OpenLoopOptions options) {
  if (!(options.rate_multiplier > 0)) {
    throw ConfigError("open-loop rate multiplier must be positive, got " +
                      std::to_string(options.rate_multiplier));
  }
  if (!(options.start_s >= 0) || !(options.duration_s > 0)) {
    throw ConfigError("open-loop window must start at or after 0 s and last more than 0 s");
  }
  return std::make_unique<OpenLoop>(std::move(stream), options);
}

std::unique_ptr<ReplayDriver> make_closed_loop(std::unique_ptr<SessionSource> sessions,
                                               ClosedLoopOptions options) {
  if (options.concurrency < 1) {
    throw ConfigError("closed-loop concurrency must be at least 1, got " +
                      std::to_string(options.concurrency));
  }
  if (!(options.duration_s > 0)) {
    throw ConfigError("closed-loop duration must be positive, got " + std::to_string(options.duration_s));
  }
  return std::make_unique<ClosedLoop>(std::move(sessions), options);
}

std::unique_ptr<ReplayDriver> make_recorded_closed_loop(std::unique_ptr<SessionSource> sessions,
                                                        std::vector<RecordedTurn> turns, double duration_s) {
  if (!(duration_s > 0)) {
    throw ConfigError("closed-loop duration must be positive, got " + std::to_string(duration_s));
  }
  return std::make_unique<RecordedClosedLoop>(std::move(sessions), std::move(turns), duration_s);
}

}  // namespace kvtier
