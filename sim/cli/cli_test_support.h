// What the end-to-end tests of the kvtier binary share: running it through the shell and writing input
// files. Each test target defines KVTIER_BINARY (sim/cli/CMakeLists.txt, validate/CMakeLists.txt).
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace kvtier::testing {

struct CliResult {
  int exit_code;
  std::string out;  // stdout, then stderr unless it was left out
};

// Runs a shell command line in which $KVTIER is the binary.
inline CliResult run_shell(const std::string& line, bool with_stderr = true) {
  std::string command =
      "export KVTIER='" + std::string(KVTIER_BINARY) + "'; " + line + (with_stderr ? " 2>&1" : " 2>/dev/null");
  FILE* pipe = popen(command.c_str(), "r");
  std::string out;
  std::array<char, 4096> buffer;
  while (size_t n = fread(buffer.data(), 1, buffer.size(), pipe)) out.append(buffer.data(), n);
  int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

inline CliResult run_kvtier(const std::string& args) { return run_shell("$KVTIER " + args); }

// A scenario that simulates in a fraction of a second: Llama-3.1-8B on the H200, HBM and a 64 GiB DRAM tier,
// two closed-loop agent sessions for a minute, two variants (always-load and breakeven).
inline const std::string kTinyScenario =
    "name: tiny\nmodel: llama-3.1-8b\nhardware: h200\ninstance: {activation_reserve: 8GiB}\n"
    "cache:\n  block_tokens: 512\n  tiers:\n    - {medium: hbm, kv: bf16}\n"
    "    - {medium: dram, kv: bf16, capacity: 64GiB}\n"
    "workload: {loop: closed, source: agent, agent: agent-default, sessions: 2, duration: 1min}\n"
    "variants:\n  - name: always-load\n  - name: breakeven\n    set: {instance.load_policy: breakeven}\n";

// Writes `text` to `name` in the temporary folder and returns its path. Each test process has a
// temporary folder of its own (sim/app/test_main.cpp), so a name need only be unique within a test.
inline std::string write_temp(const std::string& name, const std::string& text) {
  std::filesystem::path path = std::filesystem::temp_directory_path() / name;
  std::ofstream(path) << text;
  return path.string();
}

}  // namespace kvtier::testing
