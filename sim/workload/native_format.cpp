#include "sim/workload/native_format.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "sim/workload/json_record.h"

namespace kvtier {
namespace {

// Whole numbers print as integers ("27482", not "27482.0"); others in shortest round-trip form.
nlohmann::ordered_json number(double value) {
  if (std::nearbyint(value) == value && std::abs(value) < 9e15) return static_cast<int64_t>(value);
  return value;
}

}  // namespace

std::string no_work(std::string_view field) {
  return "field '" + std::string(field) +
         "': a request needs at least 1 input token (one without input does no work and never completes)";
}

uint64_t native_session_key(int64_t session, uint64_t salt) {
  return mix_ids(mix_ids(static_cast<uint64_t>(session), 0x73657373ULL), salt);
}

void materialize_turn(const NativeTurn& turn, uint64_t session_key, SessionContext& context, Request& out) {
  if (!turn.prefix.empty() && turn.turn != 0) {
    throw TraceLineError("field 'prefix': a shared prefix starts a session; this is turn " +
                         std::to_string(turn.turn));
  }
  int64_t input = turn.keep_tokens + turn.prefix_tokens + turn.new_tokens;
  if (turn.prefix_tokens > kMaxInputTokens || turn.new_tokens > kMaxInputTokens || input > kMaxInputTokens) {
    throw TraceLineError("field 'new_tokens': an input of " + std::to_string(input) + " tokens is past the " +
                         std::to_string(kMaxInputTokens) + "-token limit");
  }
  if (input == 0) throw TraceLineError(no_work("new_tokens"));
  if (turn.keep_tokens > context.context_tokens()) {
    throw TraceLineError("field 'keep_tokens': " + std::to_string(turn.keep_tokens) +
                         " is longer than the session's context of " +
                         std::to_string(context.context_tokens()) + " tokens (previous input + output)");
  }
  std::vector<Segment> appended;
  if (!turn.prefix.empty() && turn.prefix_tokens > 0) {
    appended.push_back({prefix_key(turn.prefix), turn.prefix_tokens});
  }
  if (turn.new_tokens > 0) appended.push_back({turn_input_key(session_key, turn.turn), turn.new_tokens});
  out.block_ids = context.next_input(turn.keep_tokens, appended);
  out.same_as_previous_turn = context.reused_blocks();
  out.input_tokens = context.input_tokens();
  out.output_tokens = turn.output_tokens;
  out.session_id = turn.session;
  out.turn = turn.turn;
  out.arrival_s = turn.arrival_s;
  out.think_time_s = turn.think_s;
  context.add_output(turn_output_key(session_key, turn.turn), turn.output_tokens);
}

void write_native_turn(std::ostream& out, const NativeTurn& turn) {
  nlohmann::ordered_json line = {
      {"session", turn.session}, {"turn", turn.turn}, {"arrival_s", number(turn.arrival_s)}};
  if (!turn.prefix.empty()) {
    line["prefix"] = turn.prefix;
    line["prefix_tokens"] = turn.prefix_tokens;
  }
  if (turn.keep_tokens > 0) line["keep_tokens"] = turn.keep_tokens;
  line["new_tokens"] = turn.new_tokens;
  line["output_tokens"] = turn.output_tokens;
  line["think_s"] = number(turn.think_s);
  if (turn.last) line["last"] = true;
  out << line.dump() << '\n';
}

void write_native_ids(std::ostream& out, const Request& request, int64_t block_tokens, bool last) {
  nlohmann::ordered_json line = {
      {"session", request.session_id >= 0 ? request.session_id : static_cast<int64_t>(request.id)},
      {"turn", request.turn},
      {"arrival_s", number(request.arrival_s)},
      {"input_tokens", request.input_tokens},
      {"output_tokens", request.output_tokens},
      {"think_s", number(request.think_time_s)},
      {"block_tokens", block_tokens},
      {"block_ids", request.block_ids}};
  if (last) line["last"] = true;
  out << line.dump() << '\n';
}

void write_mooncake(std::ostream& out, const Request& request) {
  nlohmann::ordered_json line = {{"timestamp", number(std::round(request.arrival_s * 1e6) / 1e3)},
                                 {"input_length", request.input_tokens},
                                 {"output_length", request.output_tokens},
                                 {"hash_ids", request.block_ids}};
  out << line.dump() << '\n';
}

}  // namespace kvtier
