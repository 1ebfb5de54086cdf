// Hit-rate-versus-capacity plots, drawn by matplotlib.
//
// kvtier does not draw plots by hand: it writes the series as JSON and runs a short matplotlib script.
// The interpreter is $KVTIER_PYTHON if set, else /usr/bin/python3 if present (Debian's, which has
// python3-matplotlib), else python3 on PATH. The file type follows the extension (.png, .svg, .pdf).
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
