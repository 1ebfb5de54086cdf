// kvtier-hw: the hardware mode's command-line tool (calibrate, roundtrip, bench, replay, serve, breakeven) on a real GPU.
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>

#include "hw/gpu/check.h"
#include "hw/tools/hw_commands.h"
#include "hw/tools/tool_support.h"
#include "sim/core/cli_help.h"
#include "sim/core/cli_numbers.h"
#include "sim/core/config.h"

int main(int argc, char** argv) {
  kvtier::hw::set_command_line(argc, argv);
  CLI::App app{"kvtier-hw: measure and exercise kvtier's tiered KV store on a real GPU"};
  app.require_subcommand(1);
  kvtier::add_version_flag(app, "kvtier-hw");
  kvtier::hw::add_calibrate_command(app);
  kvtier::hw::add_refit_command(app);
  kvtier::hw::add_roundtrip_command(app);
  kvtier::hw::add_bench_command(app);
  kvtier::hw::add_replay_command(app);
#if defined(KVTIER_HAVE_SERVE)  // a build with the forward pass (hw/tools/CMakeLists.txt)
  kvtier::hw::add_serve_command(app);
  kvtier::hw::add_breakeven_command(app);
#endif
  kvtier::check_numeric_options(app);
  kvtier::plain_help_labels(app);
  // After the arguments parse and before a command runs, so that --help, --version and refit need no GPU.
  app.parse_complete_callback([&app] {
    if (app.got_subcommand("refit")) return;
    if (kvtier::gpu::visible_device_count() == 0) {
      throw std::runtime_error(std::string("no ") + KVTIER_GPU_NAME +
                               " device visible; the hardware mode needs a GPU");
    }
  });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return kvtier::report_usage_error(app, error, "kvtier-hw");
  } catch (const kvtier::ConfigError& error) {
    std::fprintf(stderr, "kvtier-hw: %s\n", error.what());
    return 2;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "kvtier-hw: error: %s\n", error.what());
    return 1;
  }
  return 0;
}
