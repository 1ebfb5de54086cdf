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

// Writes `text` to `name` in the temporary folder and returns its path. Each test process has a
// temporary folder of its own (sim/app/test_main.cpp), so a name need only be unique within a test.
inline std::string write_temp(const std::string& name, const std::string& text) {
  std::filesystem::path path = std::filesystem::temp_directory_path() / name;
  std::ofstream(path) << text;
  return path.string();
}

}  // namespace kvtier::testing
