// The kvtier-hw subcommands. Each add_*_command() adds one subcommand to the app with its options and a
// callback that runs it; errors are thrown (ConfigError for bad input, anything else for failures) and
// main() turns them into a message and an exit status.
#pragma once

#include <CLI/CLI.hpp>

namespace kvtier::hw {

void add_calibrate_command(CLI::App& app);
void add_refit_command(CLI::App& app);
void add_roundtrip_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_replay_command(CLI::App& app);
void add_serve_command(CLI::App& app);  // only in builds with the forward pass
void add_breakeven_command(CLI::App& app);  // only in builds with the forward pass

}  // namespace kvtier::hw
