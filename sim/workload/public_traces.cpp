// Readers for the public traces: Mooncake FAST'25 and Alibaba Bailian (docs/traces.md).
#include <unordered_map>

#include "sim/workload/block_chain.h"
#include "sim/workload/line_stream.h"
#include "sim/workload/native_format.h"

namespace kvtier {
namespace {

// The ids a trace line carries must cover its input; ids past the input are not part of it.
void take_blocks(const JsonRecord& record, int64_t input_tokens, int64_t source_block_tokens,
                 int64_t block_tokens, std::vector<uint64_t>& scratch, Request& out) {
  if (input_tokens == 0) throw TraceLineError(no_work("input_length"));
  if (input_tokens > kMaxInputTokens) {
    throw TraceLineError("field 'input_length': " + std::to_string(input_tokens) + " is past the " +
                         std::to_string(kMaxInputTokens) + "-token limit");
  }
  const std::vector<uint64_t>& ids = record.id_list("hash_ids");
  int64_t needed = (input_tokens + source_block_tokens - 1) / source_block_tokens;
  if (static_cast<int64_t>(ids.size()) < needed) {
    throw TraceLineError("field 'hash_ids': " + std::to_string(ids.size()) + " blocks of " +
                         std::to_string(source_block_tokens) + " tokens cannot hold input_length " +
                         std::to_string(input_tokens) + " (expected " + std::to_string(needed) + ")");
  }
  scratch.assign(ids.begin(), ids.begin() + needed);
  reblock(scratch, source_block_tokens, input_tokens, block_tokens, out.block_ids);
}

// {"timestamp": ms, "input_length", "output_length", "hash_ids": [...]}, 512-token blocks.
class MooncakeStream : public JsonLineStream {
 public:
  MooncakeStream(std::unique_ptr<std::istream> in, const std::string& name, const TraceReadOptions& options)
      : JsonLineStream(std::move(in), name, options.skip_bad_lines),
        block_tokens_(options.block_tokens > 0 ? options.block_tokens : kSourceBlockTokens) {}

  int64_t block_tokens() const override { return block_tokens_; }

 protected:
  bool convert(const JsonRecord& record, Request& out) override {
    out.arrival_s = non_negative_number(record, "timestamp") / 1000.0;
    out.input_tokens = non_negative_integer(record, "input_length");
    out.output_tokens = output_tokens(record, "output_length");
    take_blocks(record, out.input_tokens, kSourceBlockTokens, block_tokens_, scratch_, out);
    return true;
  }

 private:
  static constexpr int64_t kSourceBlockTokens = 512;
  int64_t block_tokens_;
  std::vector<uint64_t> scratch_;
};

// {"chat_id", "parent_chat_id" (-1 for roots), "timestamp": s, "input_length", "output_length",
//  "type", "turn", "hash_ids": [...]}, 16-token blocks. Sessions follow parent links: a request's
// session is its oldest ancestor in the trace.
class BailianStream : public JsonLineStream {
 public:
  BailianStream(std::unique_ptr<std::istream> in, const std::string& name, const TraceReadOptions& options)
      : JsonLineStream(std::move(in), name, options.skip_bad_lines),
        block_tokens_(options.block_tokens > 0 ? options.block_tokens : kSourceBlockTokens) {}

  int64_t block_tokens() const override { return block_tokens_; }

 protected:
  bool convert(const JsonRecord& record, Request& out) override {
    int64_t chat = record.integer("chat_id");
    int64_t parent = record.integer("parent_chat_id");
    if (parent < -1) throw TraceLineError("field 'parent_chat_id': expected -1 or a chat id");
    out.arrival_s = non_negative_number(record, "timestamp");
    out.input_tokens = non_negative_integer(record, "input_length");
    out.output_tokens = output_tokens(record, "output_length");
    int64_t turn = record.optional_integer("turn").value_or(0);
    if (turn < 0 || turn > INT32_MAX) throw TraceLineError("field 'turn': expected a non-negative integer");
    out.turn = static_cast<int32_t>(turn);
    take_blocks(record, out.input_tokens, kSourceBlockTokens, block_tokens_, scratch_, out);
    out.session_id = chat;
    if (parent != -1) {
      auto found = session_of_.find(parent);
      out.session_id = found != session_of_.end() ? found->second : parent;
    }
    session_of_[chat] = out.session_id;
    return true;
  }

 private:
  static constexpr int64_t kSourceBlockTokens = 16;
  int64_t block_tokens_;
  std::vector<uint64_t> scratch_;
  std::unordered_map<int64_t, int64_t> session_of_;  // chat id -> session (root chat id)
};

}  // namespace

std::unique_ptr<RequestStream> make_mooncake_stream(std::unique_ptr<std::istream> in, const std::string& name,
                                                    const TraceReadOptions& options) {
  return std::make_unique<MooncakeStream>(std::move(in), name, options);
}

std::unique_ptr<RequestStream> make_bailian_stream(std::unique_ptr<std::istream> in, const std::string& name,
                                                   const TraceReadOptions& options) {
  return std::make_unique<BailianStream>(std::move(in), name, options);
}

}  // namespace kvtier
