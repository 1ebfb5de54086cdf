#include "sim/workload/trace_convert.h"

#include <algorithm>

#include "sim/workload/native_format.h"
#include "sim/workload/replay.h"

namespace kvtier {

int64_t convert_to_mooncake(const std::string& path, TraceReadOptions options, std::ostream& out) {
  options.block_tokens = default_block_tokens(TraceFormat::kMooncake);
  std::unique_ptr<RequestStream> stream = open_trace(path, options);
  Request request;
  int64_t written = 0;
  while (stream->next(request)) {
    write_mooncake(out, request);
    ++written;
  }
  return written;
}

int64_t convert_to_native(const std::string& path, TraceReadOptions options, std::ostream& out) {
  if (options.block_tokens == 0) options.block_tokens = default_block_tokens(options.format);
  std::vector<Session> sessions = load_sessions(path, options);
  struct Turn {
    const Request* request;
    bool last;
  };
  std::vector<Turn> turns;
  for (const Session& s : sessions) {
    for (size_t t = 0; t < s.turns.size(); ++t) turns.push_back({&s.turns[t], t + 1 == s.turns.size()});
  }
  std::stable_sort(turns.begin(), turns.end(),
                   [](const Turn& a, const Turn& b) { return a.request->arrival_s < b.request->arrival_s; });
  for (const Turn& turn : turns) write_native_ids(out, *turn.request, options.block_tokens, turn.last);
  return static_cast<int64_t>(turns.size());
}

}  // namespace kvtier
