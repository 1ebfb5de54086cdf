// Where `kvtier simulate` writes when --out is not given: one folder per run under the runs folder, named by
// scenario and trace, never over another run's results.
//
// The runs folder is $KVTIER_RUNS_DIR, else $XDG_DATA_HOME/kvtier/runs, else ~/.local/share/kvtier/runs:
// the same wherever kvtier is started. A run's folder is <scenario> or <scenario>--<trace> (file stems);
// where that holds another command's results (its summary.json names a different command) or anything
// kvtier did not write, the run takes <name>-2, <name>-3, ... The same command again replaces its own
// earlier folder.
#pragma once

#include <filesystem>
#include <string>

namespace kvtier {

std::filesystem::path runs_folder();

struct RunFolder {
  std::filesystem::path path;
  bool replaces_earlier = false;  // the same command's earlier results are there
};

// The folder for `command` (summary.json's "command") of `scenario` and `trace` ("" without one).
RunFolder default_run_folder(const std::string& scenario, const std::string& trace,
                             const std::string& command);

}  // namespace kvtier
