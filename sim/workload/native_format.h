// kvtier's native trace format: JSON lines, one agent turn per line (docs/traces.md has every field).
//
// A turn names its session and turn number, its arrival time, its output length and the think/tool
// time before the session's next turn, so that closed-loop replay can pace a session the way the agent
// did. Its input comes in one of two forms:
//   lengths:  keep the first `keep_tokens` of the session's context (previous input + output) and add
//             `new_tokens`; turn 0 may start with a shared prefix (`prefix`, `prefix_tokens`) that every
//             session naming it shares (an agent's system prompt and tool schemas);
//   block ids: `input_tokens`, `block_tokens` and the whole `block_ids` chain, as converted from a
//             public trace.
// This header holds the turn record, its materialisation into a Request, and the line writers.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

#include "sim/workload/request.h"
#include "sim/workload/session_context.h"

namespace kvtier {

struct NativeTurn {
  int64_t session = 0;
  int32_t turn = 0;
  double arrival_s = 0;
  std::string prefix;  // turn 0 only; empty for none
  int64_t prefix_tokens = 0;
  int64_t keep_tokens = 0;
  int64_t new_tokens = 0;
  int64_t output_tokens = 0;
  double think_s = 0;
  bool last = false;  // the session ends here: readers may drop its state
};

// No model reads more than this in one request (the largest context windows are about 10M tokens); a
// bigger number in a trace is a mistake, and expanding it into blocks would exhaust memory.
inline constexpr int64_t kMaxInputTokens = int64_t{1} << 25;

// The error for a request with no input tokens: it would do no work, and a serving engine cannot
// schedule it (it has nothing to prefill and so never produces a first token).
std::string no_work(std::string_view field);

// The content key of a session's own segments; `salt` separates sessions replayed more than once.
uint64_t native_session_key(int64_t session, uint64_t salt = 0);

// Builds the request for `turn` on the session's context (lengths form) and adds its output to it.
// Its same_as_previous_turn counts the ids kept from the context's previous input.
// Throws TraceLineError naming the field when the turn does not fit the context (keep_tokens longer
// than the context, a prefix after turn 0) or has no input.
void materialize_turn(const NativeTurn& turn, uint64_t session_key, SessionContext& context, Request& out);

// One line each, with a trailing newline.
void write_native_turn(std::ostream& out, const NativeTurn& turn);
// A request in the block-ids form; its ids are in `block_tokens`.
void write_native_ids(std::ostream& out, const Request& request, int64_t block_tokens, bool last);
// A request as a Mooncake line (timestamp in milliseconds); its ids are in the trace's block size.
void write_mooncake(std::ostream& out, const Request& request);

}  // namespace kvtier
