// kvtier-hw roundtrip: random bytes in real layouts through HBM -> DRAM -> NVMe -> DRAM -> HBM.
#include <cstdio>
#include <memory>
#include <stdexcept>

#include "hw/gpu/check.h"
#include "hw/tools/hw_commands.h"
#include "hw/tools/roundtrip.h"
#include "hw/tools/tool_support.h"
#include "sim/core/cli_help.h"
#include "sim/core/units.h"

namespace kvtier::hw {
namespace {

struct RoundtripArguments {
  RoundtripOptions options;
  std::string layouts = "bf16,turboquant4,int4";
  std::string out;
};

void run(const RoundtripArguments& arguments) {
  std::printf("device: %s\n", gpu::current_device_description().c_str());
  std::printf("%-14s %6s %6s %10s %10s %10s %10s %10s %10s\n", "layout", "groups", "pages", "page", "offload",
              "nvme write", "nvme read", "reload", "mismatch");
  nlohmann::json rows = nlohmann::json::array();
  int64_t mismatched = 0;
  for (const std::string& kv : split_list(arguments.layouts)) {
    RoundtripOptions options = arguments.options;
    options.kv = kv;
    const RoundtripReport r = run_roundtrip(options);
    const double bytes = static_cast<double>(r.bytes());
    std::printf("%-14s %6d %6lld %10s %10s %10s %10s %10s %10lld\n", kv.c_str(), r.groups,
                static_cast<long long>(r.pages), format_bytes(static_cast<double>(r.page_bytes)).c_str(),
                rate_text(bytes / r.offload_seconds).c_str(), rate_text(bytes / r.nvme_write_seconds).c_str(),
                rate_text(bytes / r.nvme_read_seconds).c_str(), rate_text(bytes / r.reload_seconds).c_str(),
                static_cast<long long>(r.mismatched_pages));
    rows.push_back({{"model", options.model},
                    {"kv", kv},
                    {"layout", r.layout},
                    {"groups", r.groups},
                    {"pages", r.pages},
                    {"page_bytes", r.page_bytes},
                    {"block_tokens", options.block_tokens},
                    {"offload_seconds", r.offload_seconds},
                    {"nvme_write_seconds", r.nvme_write_seconds},
                    {"nvme_read_seconds", r.nvme_read_seconds},
                    {"reload_seconds", r.reload_seconds},
                    {"mismatched_pages", r.mismatched_pages}});
    mismatched += r.mismatched_pages;
  }
  if (!arguments.out.empty()) {
    write_json_file(arguments.out, {{"tool", "kvtier-hw roundtrip"},
                                    {"command", command_line()},
                                    {"device", gpu::current_device_description()},
                                    {"results", rows}});
  }
  if (mismatched > 0) {
    throw std::runtime_error(std::to_string(mismatched) +
                             " page(s) came back different from what was stored");
  }
  std::printf("all pages byte-identical after HBM -> DRAM -> NVMe -> DRAM -> HBM\n");
}

}  // namespace

void add_roundtrip_command(CLI::App& app) {
  auto arguments = std::make_shared<RoundtripArguments>();
  CLI::App* command = app.add_subcommand(
      "roundtrip",
      "Send random KV pages of real layouts HBM -> DRAM -> NVMe -> DRAM -> HBM and compare bytes");
  command->add_option("--model", arguments->options.model, "Model card (name or file)")
      ->capture_default_str();
  command->add_option("--kv", arguments->layouts, "Comma-separated KV layouts (presets or files)")
      ->capture_default_str();
  command->add_option("--block-tokens", arguments->options.block_tokens, "Tokens per page")
      ->capture_default_str()
      ->transform(token_count_suffixes())
      ->check(CLI::PositiveNumber);
  command->add_option("--pages", arguments->options.pages, "Pages sent through the tiers")
      ->capture_default_str()
      ->transform(token_count_suffixes())
      ->check(CLI::PositiveNumber);
  command->add_option("--dir", arguments->options.directory, "Directory for the NVMe store's file")
      ->capture_default_str()
      ->check(CLI::ExistingDirectory);
  command->add_option("--seed", arguments->options.seed, "Seed of the random bytes")->capture_default_str();
  command->add_option("--out", arguments->out, "Also write the results as JSON to this file");
  command->callback([arguments] { run(*arguments); });
}

}  // namespace kvtier::hw
