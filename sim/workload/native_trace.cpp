// The reader of kvtier's native agent-session format (native_format.h, docs/traces.md).
#include <unordered_map>

#include "sim/workload/block_chain.h"
#include "sim/workload/line_stream.h"
#include "sim/workload/native_format.h"

namespace kvtier {
namespace {

class NativeStream : public JsonLineStream {
 public:
  NativeStream(std::unique_ptr<std::istream> in, const std::string& name, const TraceReadOptions& options)
      : JsonLineStream(std::move(in), name, options.skip_bad_lines),
        block_tokens_(options.block_tokens > 0 ? options.block_tokens : kNativeDefaultBlockTokens) {}

  int64_t block_tokens() const override { return block_tokens_; }

 protected:
  bool convert(const JsonRecord& record, Request& out) override {
    NativeTurn turn = common_fields(record);
    bool has_ids = record.has("block_ids");
    bool has_lengths = record.has("new_tokens");
    if (has_ids == has_lengths) {
      throw TraceLineError(has_ids ? "field 'block_ids': a turn has either block_ids or new_tokens, not both"
                                   : "field 'new_tokens': missing (or give block_ids)");
    }
    if (has_ids) {
      read_ids_form(record, turn, out);
    } else {
      read_lengths_form(record, turn, out);
    }
    if (turn.last) sessions_.erase(turn.session);
    return true;
  }

 private:
  struct OpenSession {
    explicit OpenSession(int64_t block_tokens) : context(block_tokens) {}
    SessionContext context;
    int32_t next_turn = 0;
    // False once a turn in the block-ids form came after the context's last input: the session's
    // previous request is then not the context's, and nothing is known about the ids they share.
    bool context_was_last = true;
  };

  static NativeTurn common_fields(const JsonRecord& record) {
    NativeTurn turn;
    turn.session = non_negative_integer(record, "session");
    int64_t number = non_negative_integer(record, "turn");
    if (number > INT32_MAX) throw TraceLineError("field 'turn': too large");
    turn.turn = static_cast<int32_t>(number);
    turn.arrival_s = non_negative_number(record, "arrival_s");
    turn.output_tokens = output_tokens(record, "output_tokens");
    turn.think_s = record.has("think_s") ? non_negative_number(record, "think_s") : 0.0;
    turn.last = record.optional_boolean("last").value_or(false);
    return turn;
  }

  void read_ids_form(const JsonRecord& record, const NativeTurn& turn, Request& out) {
    int64_t source_block_tokens = non_negative_integer(record, "block_tokens");
    if (source_block_tokens == 0) throw TraceLineError("field 'block_tokens': expected a positive integer");
    out.input_tokens = non_negative_integer(record, "input_tokens");
    if (out.input_tokens == 0) throw TraceLineError(no_work("input_tokens"));
    if (out.input_tokens > kMaxInputTokens) {
      throw TraceLineError("field 'input_tokens': " + std::to_string(out.input_tokens) + " is past the " +
                           std::to_string(kMaxInputTokens) + "-token limit");
    }
    const std::vector<uint64_t>& ids = record.id_list("block_ids");
    int64_t needed = (out.input_tokens + source_block_tokens - 1) / source_block_tokens;
    if (static_cast<int64_t>(ids.size()) != needed) {
      throw TraceLineError("field 'block_ids': expected " + std::to_string(needed) + " ids for " +
                           std::to_string(out.input_tokens) + " tokens in blocks of " +
                           std::to_string(source_block_tokens) + ", found " + std::to_string(ids.size()));
    }
    reblock(ids, source_block_tokens, out.input_tokens, block_tokens_, out.block_ids);
    auto open = sessions_.find(turn.session);
    if (open != sessions_.end()) open->second.context_was_last = false;
    out.session_id = turn.session;
    out.turn = turn.turn;
    out.arrival_s = turn.arrival_s;
    out.output_tokens = turn.output_tokens;
    out.think_time_s = turn.think_s;
  }

  void read_lengths_form(const JsonRecord& record, NativeTurn& turn, Request& out) {
    turn.new_tokens = non_negative_integer(record, "new_tokens");
    turn.keep_tokens = record.has("keep_tokens") ? non_negative_integer(record, "keep_tokens") : 0;
    turn.prefix = record.optional_string("prefix").value_or("");
    if (!turn.prefix.empty()) turn.prefix_tokens = non_negative_integer(record, "prefix_tokens");

    auto found = sessions_.find(turn.session);
    if (turn.turn == 0 && found != sessions_.end()) sessions_.erase(found);  // the id starts a new session
    if (turn.turn != 0 && found == sessions_.end()) {
      throw TraceLineError("field 'turn': turn " + std::to_string(turn.turn) + " of session " +
                           std::to_string(turn.session) + " comes without the turns before it");
    }
    if (turn.turn == 0) found = sessions_.emplace(turn.session, OpenSession(block_tokens_)).first;
    OpenSession& session = found->second;
    if (turn.turn != session.next_turn) {
      throw TraceLineError("field 'turn': expected turn " + std::to_string(session.next_turn) +
                           " of session " + std::to_string(turn.session) + ", found " +
                           std::to_string(turn.turn));
    }
    materialize_turn(turn, native_session_key(turn.session), session.context, out);
    if (!session.context_was_last) out.same_as_previous_turn = 0;
    session.context_was_last = true;
    ++session.next_turn;
  }

  int64_t block_tokens_;
  std::unordered_map<int64_t, OpenSession> sessions_;
};

}  // namespace

std::unique_ptr<RequestStream> make_native_stream(std::unique_ptr<std::istream> in, const std::string& name,
                                                  const TraceReadOptions& options) {
  return std::make_unique<NativeStream>(std::move(in), name, options);
}

}  // namespace kvtier
