// Plots are drawn by matplotlib, not by hand: callers write their data as files and run a plotting
// script (sim/plots/*.py, embedded in the binary) with a Python interpreter that has matplotlib.
// The interpreter is $KVTIER_PYTHON if set, else /usr/bin/python3 if present (Debian's, with
// python3-matplotlib), else python3 on PATH.
#pragma once

#include <string>
#include <vector>

namespace kvtier {

std::string python_interpreter();

// Runs the embedded script `script_path` (such as "sim/plots/simulation.py") with `args`. Lines of its
// output that start with "kvtier: " go to stderr as they come (a script says so what it is drawing); the
// rest is kept. Throws ConfigError with the interpreter's kept output when it fails.
void run_plot_script(const std::string& script_path, const std::vector<std::string>& args);

}  // namespace kvtier
