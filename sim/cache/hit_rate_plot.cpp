#include "hit_rate_plot.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "config.h"

namespace kvtier {
namespace {

constexpr const char* kScript = R"py(
import json, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
with open(sys.argv[1]) as f:
    plot = json.load(f)
fig, ax = plt.subplots(figsize=(7, 4.5))
for s in plot["series"]:
    ax.plot(s["x"], [100 * y for y in s["y"]], marker="o", markersize=3, label=s["label"])
if plot["ceiling"] >= 0:
    ax.axhline(100 * plot["ceiling"], linestyle="--", color="gray", label="infinite cache")
ax.set_xscale("log")
ax.set_xlabel(plot["x_label"])
ax.set_ylabel("prefix hit rate (% of tokens)")
ax.set_ylim(0, 100)
ax.set_title(plot["title"])
ax.grid(True, which="both", alpha=0.3)
ax.legend()
fig.tight_layout()
fig.savefig(sys.argv[2])
)py";

std::string python_interpreter() {
  if (const char* chosen = std::getenv("KVTIER_PYTHON")) return chosen;
  if (std::filesystem::exists("/usr/bin/python3")) return "/usr/bin/python3";
  return "python3";
}

std::string shell_quote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

}  // namespace

void write_hit_rate_plot(const HitRatePlot& plot, const std::string& path) {
  nlohmann::json data = {{"title", plot.title}, {"x_label", plot.x_label}, {"ceiling", plot.ceiling}};
  data["series"] = nlohmann::json::array();
  for (const PlotSeries& s : plot.series)
    data["series"].push_back({{"label", s.label}, {"x", s.x}, {"y", s.y}});

  std::filesystem::path dir = std::filesystem::temp_directory_path();
  std::string stem = "kvtier-plot-" + std::to_string(::getpid());
  std::filesystem::path data_file = dir / (stem + ".json");
  std::filesystem::path script_file = dir / (stem + ".py");
  std::ofstream(data_file) << data.dump();
  std::ofstream(script_file) << kScript;
  std::string command = shell_quote(python_interpreter()) + " " + shell_quote(script_file.string()) + " " +
                        shell_quote(data_file.string()) + " " + shell_quote(path) + " 2>&1";
  std::string output;
  int status = -1;
  if (FILE* pipe = ::popen(command.c_str(), "r")) {
    char buffer[512];
    while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) output += buffer;
    status = ::pclose(pipe);
  }
  std::filesystem::remove(data_file);
  std::filesystem::remove(script_file);
  if (status != 0) {
    throw ConfigError("--plot " + path +
                      ": matplotlib could not draw it (set KVTIER_PYTHON to a python3 with " +
                      "matplotlib): " + output);
  }
}

}  // namespace kvtier
