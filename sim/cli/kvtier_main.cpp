// kvtier: size HBM, DRAM and NVMe for KV caches, choose bf16 or 4-bit KV, and ask whether offloading
// beats recomputing. See README.md for the commands.
#include <algorithm>
#include <iostream>

#include "sim/cli/commands.h"
#include "sim/core/cli_help.h"
#include "sim/core/cli_numbers.h"
#include "sim/core/config.h"

namespace kvtier {

std::vector<CommandEntry>& command_registry() {
  static std::vector<CommandEntry> registry;
  return registry;
}

}  // namespace kvtier

int main(int argc, char** argv) {
  CLI::App app{"kvtier: a simulator of tiered, quantized KV caches for LLM serving"};
  app.require_subcommand(1);
  kvtier::add_version_flag(app, "kvtier");
  auto& commands = kvtier::command_registry();
  std::stable_sort(commands.begin(), commands.end(), [](auto& a, auto& b) { return a.order < b.order; });
  for (const auto& command : commands) command.add(app);
  kvtier::check_numeric_options(app);
  kvtier::plain_help_labels(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return kvtier::report_usage_error(app, e, "kvtier");
  } catch (const kvtier::ConfigError& e) {
    std::cerr << "kvtier: " << e.what() << "\n";
    return 2;
  } catch (const kvtier::UnitError& e) {
    std::cerr << "kvtier: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {  // not the input's fault: a failed write, a crashed simulation
    std::cerr << "kvtier: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
