// Internal to the readers: a RequestStream over JSON lines. It reads the input in large chunks, parses
// each non-empty line into a JsonRecord, and lets a format turn the record into a Request. Errors from
// the format come back with the file and line number in front; skipped lines are counted here.
#pragma once

#include <istream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sim/workload/json_record.h"
#include "sim/workload/trace_reader.h"

namespace kvtier {

// No trace line comes near this (a Bailian line at the reader's input limit is about 20 MiB); a longer
// one means the input is not a trace, and buffering it would exhaust memory.
inline constexpr size_t kMaxLineBytes = size_t{64} << 20;

// Splits a stream into lines without reading it whole.
class LineReader {
 public:
  // `name` stands for the input in error messages.
  LineReader(std::unique_ptr<std::istream> in, std::string name)
      : in_(std::move(in)), name_(std::move(name)) {}
  // The next line without its newline (and without a trailing '\r'); false at the end of input. Throws
  // ConfigError naming the input and line for a line longer than kMaxLineBytes or one holding a NUL
  // byte (a binary file): neither can be skipped as a bad line.
  bool next(std::string_view& line);
  int64_t line_number() const { return line_number_; }

 private:
  bool refill();
  [[noreturn]] void fail(const std::string& what) const;

  std::unique_ptr<std::istream> in_;
  std::string name_;
  std::vector<char> buffer_;
  size_t begin_ = 0;
  size_t end_ = 0;
  bool eof_ = false;
  int64_t line_number_ = 0;
};

class JsonLineStream : public RequestStream {
 public:
  JsonLineStream(std::unique_ptr<std::istream> in, std::string name, bool skip_bad_lines)
      : lines_(std::move(in), name), name_(std::move(name)), skip_bad_lines_(skip_bad_lines) {}

  bool next(Request& out) final;
  int64_t skipped_lines() const final { return skipped_; }
  std::string location() const final { return name_ + ":" + std::to_string(lines_.line_number()); }

 protected:
  // Turns one parsed line into `out`; throws TraceLineError for a bad value. Returns false for a line
  // that produces no request.
  virtual bool convert(const JsonRecord& record, Request& out) = 0;

 private:
  LineReader lines_;
  std::string name_;
  bool skip_bad_lines_;
  JsonRecord record_;
  int64_t skipped_ = 0;
  uint64_t next_id_ = 0;
};

std::unique_ptr<RequestStream> make_mooncake_stream(std::unique_ptr<std::istream> in, const std::string& name,
                                                    const TraceReadOptions& options);
std::unique_ptr<RequestStream> make_bailian_stream(std::unique_ptr<std::istream> in, const std::string& name,
                                                   const TraceReadOptions& options);
std::unique_ptr<RequestStream> make_native_stream(std::unique_ptr<std::istream> in, const std::string& name,
                                                  const TraceReadOptions& options);

// Checks shared by the formats; each throws TraceLineError naming the field.
int64_t non_negative_integer(const JsonRecord& record, std::string_view field);
// At most kMaxInputTokens: no model generates more than its context window holds.
int64_t output_tokens(const JsonRecord& record, std::string_view field);
double non_negative_number(const JsonRecord& record, std::string_view field);

}  // namespace kvtier
