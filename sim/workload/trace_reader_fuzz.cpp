// libFuzzer target for the trace readers (build: docs/traces.md, "Fuzzing").
//
// The first input byte picks the format and the block size; the rest is the trace text. Every input
// must either read or fail with ConfigError: a crash, a sanitizer report or another exception is a bug.
// Each line is also parsed by JsonRecord's fast scan and by nlohmann::json alone, which must agree.
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>

#include "sim/workload/json_record.h"
#include "sim/workload/trace_reader.h"

namespace {

// A field-by-field rendering through the public accessors, to compare two parses.
std::string describe(const kvtier::JsonRecord& record) {
  std::string out;
  for (const std::string& name : record.field_names()) {
    out += name + "=";
    try {
      out += std::to_string(record.number(name));
      continue;
    } catch (const kvtier::TraceLineError&) {
    }
    try {
      out += "s:" + record.optional_string(name).value_or("null");
      continue;
    } catch (const kvtier::TraceLineError&) {
    }
    try {
      out += record.optional_boolean(name).value() ? "true" : "false";
      continue;
    } catch (const kvtier::TraceLineError&) {
    }
    for (uint64_t id : record.id_list(name)) out += std::to_string(id) + ",";
  }
  return out;
}

void check_json_paths_agree(const std::string& text) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    kvtier::JsonRecord both, library;
    bool both_ok = true, library_ok = true;
    try {
      both.parse(line);
    } catch (const kvtier::TraceLineError&) {
      both_ok = false;
    }
    try {
      library.parse_with_library(line);
    } catch (const kvtier::TraceLineError&) {
      library_ok = false;
    }
    if (both_ok != library_ok || (both_ok && describe(both) != describe(library))) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static constexpr kvtier::TraceFormat kFormats[] = {
      kvtier::TraceFormat::kMooncake, kvtier::TraceFormat::kBailian, kvtier::TraceFormat::kNative};
  static constexpr int64_t kBlockTokens[] = {0, 16, 100, 256, 512, 1000};
  kvtier::TraceReadOptions options;
  options.format = kFormats[data[0] % 3];
  options.block_tokens = kBlockTokens[(data[0] / 3) % 6];
  options.skip_bad_lines = (data[0] & 0x80) != 0;
  std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  check_json_paths_agree(text);
  try {
    auto stream = kvtier::open_trace_stream(std::make_unique<std::istringstream>(text), "fuzz", options);
    kvtier::Request request;
    while (stream->next(request)) {
    }
  } catch (const kvtier::ConfigError&) {
  }
  return 0;
}
