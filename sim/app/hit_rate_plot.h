// Hit-rate-versus-capacity plots, drawn by matplotlib through the project's plotting runner.
//
// kvtier does not draw plots by hand: the series go to a JSON file that the built-in script
// sim/plots/hit_rate.py draws (see matplotlib.h for how the interpreter is chosen). The file type follows
// the output path's extension (.png, .svg, .pdf).
#pragma once

#include <string>
#include <vector>

namespace kvtier {

struct PlotSeries {
  std::string label;
  std::vector<double> x;
  std::vector<double> y;  // hit rate, 0 to 1
};

struct HitRatePlot {
  std::string title;
  std::string x_label;
  std::vector<PlotSeries> series;
  double ceiling = -1;  // the theoretical maximum, drawn as a dashed line when >= 0
};

// Writes `path`. Throws ConfigError when the interpreter or matplotlib fails, with its message.
void write_hit_rate_plot(const HitRatePlot& plot, const std::string& path);

}  // namespace kvtier
