#include "sim/app/hit_rate_plot.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "sim/app/plot_runner.h"

namespace kvtier {

void write_hit_rate_plot(const HitRatePlot& plot, const std::string& path) {
  nlohmann::json data = {{"title", plot.title}, {"x_label", plot.x_label}, {"ceiling", plot.ceiling}};
  data["series"] = nlohmann::json::array();
  for (const PlotSeries& s : plot.series)
    data["series"].push_back({{"label", s.label}, {"x", s.x}, {"y", s.y}});
  std::filesystem::path data_file =
      std::filesystem::temp_directory_path() / ("kvtier-hit-rate-" + std::to_string(::getpid()) + ".json");
  std::ofstream(data_file) << data.dump();
  try {
    run_plot_script("sim/plots/hit_rate.py", {data_file.string(), path});
  } catch (...) {
    std::filesystem::remove(data_file);
    throw;
  }
  std::filesystem::remove(data_file);
}

}  // namespace kvtier
