// The kvtier subcommands register themselves: each cmd_*.cpp defines a static CommandRegistration
// that adds its options and a callback to the app, so adding a command touches no other file.
// Callbacks throw ConfigError (or UnitError) for bad input, which main() reports with exit code 2.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

namespace kvtier {

struct CommandEntry {
  int order;  // position in --help: analysis commands first, simulation after
  std::function<void(CLI::App&)> add;
};

std::vector<CommandEntry>& command_registry();

struct CommandRegistration {
  CommandRegistration(int order, std::function<void(CLI::App&)> add) {
    command_registry().push_back({order, std::move(add)});
  }
};

}  // namespace kvtier
