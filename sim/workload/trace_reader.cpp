#include "sim/workload/trace_reader.h"

#include <algorithm>
#include <cstring>

#include "sim/workload/line_stream.h"
#include "sim/workload/native_format.h"
#include "sim/workload/trace_input.h"

namespace kvtier {
namespace {

// Reads fill one buffer of 64 KiB, which doubles only when a single line fills it: telling a trace's
// format reads one line, and a fresh page faults (about 12 us on the development VM), so a buffer that
// grew with the file cost a small trace more in faults than in reading.
constexpr size_t kBufferBytes = size_t{64} << 10;

}  // namespace

TraceFormat parse_trace_format(const std::string& name) {
  if (name == "mooncake") return TraceFormat::kMooncake;
  if (name == "bailian") return TraceFormat::kBailian;
  if (name == "native") return TraceFormat::kNative;
  throw ConfigError("unknown trace format '" + name + "': expected mooncake, bailian or native");
}

const char* trace_format_name(TraceFormat format) {
  switch (format) {
    case TraceFormat::kMooncake:
      return "mooncake";
    case TraceFormat::kBailian:
      return "bailian";
    case TraceFormat::kNative:
      return "native";
  }
  return "?";
}

int64_t default_block_tokens(TraceFormat format) {
  switch (format) {
    case TraceFormat::kMooncake:
      return 512;
    case TraceFormat::kBailian:
      return 16;
    case TraceFormat::kNative:
      return kNativeDefaultBlockTokens;
  }
  return kNativeDefaultBlockTokens;
}

TraceFormat detect_trace_format(const std::string& path) {
  const std::string name = trace_input_name(path);
  LineReader lines(peek_trace_input(path), name);
  std::string_view line;
  while (lines.next(line)) {
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    JsonRecord record;
    try {
      record.parse(line);
    } catch (const TraceLineError& e) {
      throw ConfigError(name + ":" + std::to_string(lines.line_number()) + ": " + e.what());
    }
    if (record.has("chat_id")) return TraceFormat::kBailian;
    if (record.has("session")) return TraceFormat::kNative;
    if (record.has("hash_ids")) return TraceFormat::kMooncake;
    throw ConfigError(name + ":" + std::to_string(lines.line_number()) +
                      ": cannot tell the trace format (no chat_id, session or hash_ids field); "
                      "name it with --trace-format");
  }
  throw ConfigError(name + ": empty trace");
}

std::unique_ptr<RequestStream> open_trace(const std::string& path, const TraceReadOptions& options) {
  return open_trace_stream(open_trace_input(path), trace_input_name(path), options);
}

std::unique_ptr<RequestStream> open_trace_stream(std::unique_ptr<std::istream> in, const std::string& name,
                                                 const TraceReadOptions& options) {
  if (options.block_tokens < 0) {
    throw ConfigError(name + ": block size must be positive (or 0 for the trace's own), got " +
                      std::to_string(options.block_tokens));
  }
  switch (options.format) {
    case TraceFormat::kMooncake:
      return make_mooncake_stream(std::move(in), name, options);
    case TraceFormat::kBailian:
      return make_bailian_stream(std::move(in), name, options);
    case TraceFormat::kNative:
      return make_native_stream(std::move(in), name, options);
  }
  throw ConfigError(name + ": unknown trace format");
}

bool LineReader::refill() {
  if (eof_) return false;
  // Keep the unfinished line at the front, grow when one line outgrows the buffer.
  size_t pending = end_ - begin_;
  if (begin_ > 0 && pending > 0) std::memmove(buffer_.data(), buffer_.data() + begin_, pending);
  begin_ = 0;
  end_ = pending;
  if (buffer_.empty()) buffer_.resize(kBufferBytes);
  if (pending == buffer_.size()) buffer_.resize(2 * buffer_.size());  // one line fills it
  in_->read(buffer_.data() + end_, static_cast<std::streamsize>(buffer_.size() - end_));
  std::streamsize got = in_->gcount();
  if (got <= 0) eof_ = true;
  end_ += static_cast<size_t>(std::max<std::streamsize>(got, 0));
  return got > 0;
}

void LineReader::fail(const std::string& what) const {
  throw ConfigError(name_ + ":" + std::to_string(line_number_ + 1) + ": " + what);
}

bool LineReader::next(std::string_view& line) {
  static const std::string too_long =
      "a line longer than " + std::to_string(kMaxLineBytes >> 20) + " MiB: not a JSON-lines trace";
  size_t scanned = begin_;
  while (true) {
    const char* start = buffer_.data() + scanned;
    size_t unscanned = end_ - scanned;
    const char* newline =
        unscanned > 0 ? static_cast<const char*>(std::memchr(start, '\n', unscanned)) : nullptr;
    size_t line_bytes = newline != nullptr ? static_cast<size_t>(newline - start) : unscanned;
    if (line_bytes > 0 && std::memchr(start, '\0', line_bytes) != nullptr) {
      fail("a NUL byte: this is a binary file, not a JSON-lines trace");
    }
    if (newline != nullptr) {
      size_t length = static_cast<size_t>(newline - (buffer_.data() + begin_));
      if (length > kMaxLineBytes) fail(too_long);
      line = std::string_view(buffer_.data() + begin_, length);
      begin_ += length + 1;
      break;
    }
    size_t consumed = end_ - begin_;
    if (consumed > kMaxLineBytes) fail(too_long);
    if (!refill()) {
      if (end_ == begin_) return false;
      line = std::string_view(buffer_.data() + begin_, end_ - begin_);  // last line without a newline
      begin_ = end_;
      break;
    }
    scanned = begin_ + consumed;
  }
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  ++line_number_;
  return true;
}

// Clears a request but keeps its block list's capacity: a reader refills the same Request millions of times.
void reset(Request& request) {
  std::vector<uint64_t> ids = std::move(request.block_ids);
  ids.clear();
  request = Request{};
  request.block_ids = std::move(ids);
}

bool JsonLineStream::next(Request& out) {
  std::string_view line;
  while (lines_.next(line)) {
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    try {
      record_.parse(line);
      reset(out);
      if (!convert(record_, out)) continue;
      out.id = next_id_++;
      return true;
    } catch (const TraceLineError& e) {
      if (!skip_bad_lines_) {
        throw ConfigError(name_ + ":" + std::to_string(lines_.line_number()) + ": " + e.what());
      }
      ++skipped_;
    }
  }
  return false;
}

int64_t non_negative_integer(const JsonRecord& record, std::string_view field) {
  int64_t value = record.integer(field);
  if (value < 0) {
    throw TraceLineError("field '" + std::string(field) + "': expected a non-negative integer, got " +
                         std::to_string(value));
  }
  return value;
}

int64_t output_tokens(const JsonRecord& record, std::string_view field) {
  int64_t value = non_negative_integer(record, field);
  if (value > kMaxInputTokens) {
    throw TraceLineError("field '" + std::string(field) + "': " + std::to_string(value) + " is past the " +
                         std::to_string(kMaxInputTokens) + "-token limit");
  }
  return value;
}

double non_negative_number(const JsonRecord& record, std::string_view field) {
  double value = record.number(field);
  if (!(value >= 0)) {
    throw TraceLineError("field '" + std::string(field) + "': expected a non-negative number, got " +
                         std::to_string(value));
  }
  return value;
}

}  // namespace kvtier
