#include "sim/cli/runs_folder.h"

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "sim/app/output_folder.h"
#include "sim/core/config.h"

namespace kvtier {
namespace {

std::string environment(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? "" : value;
}

// The command an earlier run recorded in `folder`, or "" where kvtier did not write it or it has none.
std::string recorded_command(const std::filesystem::path& folder) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(folder / kOutputMarker, error)) return "";
  std::ifstream in(folder / "summary.json");
  nlohmann::json summary = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!summary.is_object() || !summary.contains("command") || !summary["command"].is_string()) return "";
  return summary["command"].get<std::string>();
}

std::string base_name(const std::string& scenario, const std::string& trace) {
  std::string name = std::filesystem::path(scenario).stem().string();
  if (trace.empty()) return name;
  return name + "--" + (trace == "-" ? "stdin" : std::filesystem::path(trace).stem().string());
}

}  // namespace

std::filesystem::path runs_folder() {
  if (std::string dir = environment("KVTIER_RUNS_DIR"); !dir.empty()) return dir;
  if (std::string dir = environment("XDG_DATA_HOME"); !dir.empty())
    return std::filesystem::path(dir) / "kvtier/runs";
  std::string home = environment("HOME");
  if (home.empty())
    throw ConfigError("set KVTIER_RUNS_DIR or HOME, or give --out: no folder for the results");
  return std::filesystem::path(home) / ".local/share/kvtier/runs";
}

RunFolder default_run_folder(const std::string& scenario, const std::string& trace,
                             const std::string& command) {
  const std::filesystem::path root = runs_folder();
  const std::string name = base_name(scenario, trace);
  for (int n = 1;; ++n) {
    std::filesystem::path candidate = root / (n == 1 ? name : name + "-" + std::to_string(n));
    std::error_code error;
    if (!std::filesystem::exists(candidate, error)) return {candidate, false};
    if (recorded_command(candidate) == command) return {candidate, true};
  }
}

}  // namespace kvtier
