// Session sources for closed-loop replay: the synthetic generator and recorded traces.
#include <algorithm>
#include <map>

#include "sim/workload/block_chain.h"
#include "sim/workload/native_format.h"
#include "sim/workload/replay.h"

namespace kvtier {
namespace {

class GeneratedSessions : public SessionSource {
 public:
  GeneratedSessions(const AgentWorkload& workload, int64_t block_tokens)
      : generator_(workload), block_tokens_(block_tokens) {}

  bool next(Session& out) override {
    std::vector<NativeTurn> turns = generator_.next_session();
    SessionContext context(block_tokens_);
    uint64_t key = native_session_key(turns.front().session, generator_.workload().seed);
    out.id = turns.front().session;
    out.turns.assign(turns.size(), Request{});
    for (size_t t = 0; t < turns.size(); ++t) materialize_turn(turns[t], key, context, out.turns[t]);
    return true;
  }

 private:
  AgentSessionGenerator generator_;
  int64_t block_tokens_;
};

class TraceSessions : public SessionSource {
 public:
  explicit TraceSessions(std::vector<Session> sessions) : sessions_(std::move(sessions)) {}

  bool next(Session& out) override {
    if (sessions_.empty()) return false;
    out = sessions_[next_];
    if (round_ > 0) {
      for (Request& turn : out.turns) {
        for (uint64_t& id : turn.block_ids) id = mix_ids(id, round_);
      }
    }
    if (++next_ == sessions_.size()) {
      next_ = 0;
      ++round_;
    }
    return true;
  }

 private:
  std::vector<Session> sessions_;
  size_t next_ = 0;
  uint64_t round_ = 0;
};

}  // namespace

std::unique_ptr<SessionSource> make_generated_sessions(const AgentWorkload& workload, int64_t block_tokens) {
  if (block_tokens <= 0)
    throw ConfigError("block size must be positive, got " + std::to_string(block_tokens));
  return std::make_unique<GeneratedSessions>(workload, block_tokens);
}

std::unique_ptr<SessionSource> make_trace_sessions(std::vector<Session> sessions) {
  return std::make_unique<TraceSessions>(std::move(sessions));
}

std::vector<Session> load_sessions(const std::string& path, const TraceReadOptions& options) {
  std::unique_ptr<RequestStream> stream = open_trace(path, options);
  std::map<int64_t, size_t> index_of;  // trace session id -> position in `sessions`
  std::vector<Session> sessions;
  Request request;
  while (stream->next(request)) {
    int64_t key = request.session_id >= 0 ? request.session_id : -1 - static_cast<int64_t>(request.id);
    auto [found, inserted] = index_of.emplace(key, sessions.size());
    if (inserted) sessions.push_back(Session{request.session_id, {}});
    sessions[found->second].turns.push_back(request);
  }
  if (options.format != TraceFormat::kNative) {
    for (Session& session : sessions) {
      for (size_t t = 0; t + 1 < session.turns.size(); ++t) {
        session.turns[t].think_time_s =
            std::max(0.0, session.turns[t + 1].arrival_s - session.turns[t].arrival_s);
      }
    }
  }
  if (sessions.empty()) throw ConfigError(path + ": no requests, so no sessions to replay");
  return sessions;
}

}  // namespace kvtier
