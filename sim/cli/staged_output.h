// Writing a command's results into an output folder by the contract of sim/app/output_folder.h: into a
// temporary folder first, moved into place only once everything is written and no termination signal
// came. Errors name the final paths, not the temporary ones.
#pragma once

#include <filesystem>
#include <functional>

#include "sim/app/output_folder.h"

namespace kvtier {

// Runs `write` on the temporary folder of `target`, then commits it. A ConfigError stays a ConfigError
// (exit 2) and an interruption (isolated_run.h) propagates; any other failure becomes a runtime_error.
void write_staged(const OutputTarget& target, const std::function<void(const std::filesystem::path&)>& write);

}  // namespace kvtier
