// Helpers shared by the traces tests: in-memory traces and the shared Mooncake sample.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "sim/workload/trace_reader.h"

namespace kvtier::testing {

inline std::unique_ptr<RequestStream> stream_of(const std::string& text, TraceFormat format,
                                                int64_t block_tokens = 0, bool skip_bad_lines = false) {
  TraceReadOptions options{format, block_tokens, skip_bad_lines};
  return open_trace_stream(std::make_unique<std::istringstream>(text), "test.jsonl", options);
}

inline std::vector<Request> read_all(RequestStream& stream) {
  std::vector<Request> out;
  Request r;
  while (stream.next(r)) out.push_back(r);
  return out;
}

// A file under the test's temporary directory, removed with it.
inline std::string temp_file(const std::string& name, const std::string& text) {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() /
      ("kvtier-traces-test-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
       name);
  std::ofstream(path) << text;
  return path.string();
}

inline const char* kMooncakeSample = "traces/mooncake-conversation-first2000.jsonl";

#define KVTIER_REQUIRE_MOONCAKE_SAMPLE()                            \
  if (!std::filesystem::exists(::kvtier::testing::kMooncakeSample)) \
  FAIL() << ::kvtier::testing::kMooncakeSample                     \
         << " is missing: the tests run from the source root, where traces/ holds it"

}  // namespace kvtier::testing
