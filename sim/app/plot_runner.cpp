#include "sim/app/plot_runner.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string_view>

#include "sim/core/config.h"
#include "sim/core/config_files.h"

namespace kvtier {
namespace {

std::string shell_quote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::string_view embedded_text(const std::string& path) {
  for (const EmbeddedFile& f : embedded_files()) {
    if (f.path == path) return f.text;
  }
  throw ConfigError(path + ": no such built-in plotting script");
}

}  // namespace

std::string python_interpreter() {
  if (const char* chosen = std::getenv("KVTIER_PYTHON")) return chosen;
  if (std::filesystem::exists("/usr/bin/python3")) return "/usr/bin/python3";
  return "python3";
}

void run_plot_script(const std::string& script_path, const std::vector<std::string>& args) {
  std::filesystem::path script =
      std::filesystem::temp_directory_path() / ("kvtier-plot-" + std::to_string(::getpid()) + ".py");
  std::ofstream(script) << embedded_text(script_path);
  std::string command = shell_quote(python_interpreter());
  command.append(" ").append(shell_quote(script.string()));
  for (const std::string& a : args) command.append(" ").append(shell_quote(a));
  command.append(" 2>&1");
  std::string output;
  int status = -1;
  if (FILE* pipe = ::popen(command.c_str(), "r")) {
    char buffer[512];
    // A line the script starts with "kvtier: " is for the user now (what it is drawing); the rest is kept
    // for the error message. fgets splits only lines longer than the buffer.
    bool line_start = true, for_user = false;
    while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) {
      if (line_start) for_user = std::string_view(buffer).starts_with("kvtier: ");
      line_start = std::string_view(buffer).ends_with('\n');
      if (for_user) {
        std::fputs(buffer, stderr);
        std::fflush(stderr);
      } else {
        output += buffer;
      }
    }
    status = ::pclose(pipe);
  }
  std::filesystem::remove(script);
  if (status != 0) {
    throw ConfigError(script_path +
                      ": matplotlib could not draw the plots (set KVTIER_PYTHON to a python3 with "
                      "matplotlib): " +
                      output);
  }
}

}  // namespace kvtier
