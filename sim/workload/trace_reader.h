// Streaming readers for request traces: Mooncake FAST'25, Alibaba Bailian, and kvtier's native
// agent-session format (docs/traces.md).
//
// A RequestStream hands out one Request at a time and never holds the whole file, so a 10-million-line
// trace costs the memory of one line plus, for session formats, a little state per open session. Block
// ids come out in the block size the caller asks for (TraceReadOptions::block_tokens), re-chained so
// that equal ids still mean equal prefixes (block_chain.h). A bad line is a ConfigError naming the
// file, line number and field; with skip_bad_lines the stream skips it and counts it instead.
#pragma once

#include <cstdint>
#include <istream>
#include <memory>
#include <string>

#include "sim/core/config.h"
#include "sim/workload/request.h"

namespace kvtier {

enum class TraceFormat { kMooncake, kBailian, kNative };

// "mooncake" | "bailian" | "native"; throws ConfigError naming the choices.
TraceFormat parse_trace_format(const std::string& name);
const char* trace_format_name(TraceFormat format);
// Guesses the format from the first non-empty line's fields (chat_id: Bailian; session: native;
// hash_ids: Mooncake). Reads a pipe without consuming it (trace_input.h). Throws ConfigError when the
// file cannot be read or the line fits none.
TraceFormat detect_trace_format(const std::string& path);

// Block size of the ids a trace carries: 512 tokens (Mooncake), 16 (Bailian). Native turns given as
// lengths have no block size of their own; they are cut into kNativeDefaultBlockTokens unless asked.
int64_t default_block_tokens(TraceFormat format);
inline constexpr int64_t kNativeDefaultBlockTokens = 256;  // LMCache's default chunk size

struct TraceReadOptions {
  TraceFormat format = TraceFormat::kMooncake;
  int64_t block_tokens = 0;  // re-block to this size; 0 keeps the trace's own (512 Mooncake, 16 Bailian)
  bool skip_bad_lines = false;
};

class RequestStream {  // streaming: never holds the whole file
 public:
  virtual ~RequestStream() = default;
  virtual bool next(Request& out) = 0;  // false at the end; throws ConfigError on a bad line
  virtual int64_t skipped_lines() const = 0;
  virtual int64_t block_tokens() const = 0;  // block size of the ids it produces
  // "file:line" of the request next() returned last, for errors found after reading it.
  virtual std::string location() const = 0;
};

// Opens a trace file; "-" reads standard input, and other pipes are read as they come (trace_input.h).
// Throws ConfigError when it cannot be opened or block_tokens is negative.
std::unique_ptr<RequestStream> open_trace(const std::string& path, const TraceReadOptions& options);
// The same over any stream; `name` stands for the file in error messages.
std::unique_ptr<RequestStream> open_trace_stream(std::unique_ptr<std::istream> in, const std::string& name,
                                                 const TraceReadOptions& options);

}  // namespace kvtier
