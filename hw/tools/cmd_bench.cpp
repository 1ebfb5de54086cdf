// kvtier-hw bench: the offload, reload and disk paths against the machine's measured limits.
#include <cstdio>
#include <memory>

#include "hw/tools/hw_commands.h"
#include "hw/gpu/check.h"
#include "hw/tools/offload_bench.h"
#include "hw/tools/tool_support.h"
#include "sim/core/units.h"

namespace kvtier::hw {
namespace {

struct BenchArguments {
  std::string page_sizes = "16KiB,64KiB,256KiB,1MiB";
  std::string disk_page_sizes = "64KiB,1MiB";
  std::string batch = "1GiB";
  std::string disk_batch = "1GiB";
  std::string directory = ".";
  int queue_depth = 8;
  bool skip_disk = false;
  std::string out;
};

void print(const std::vector<BenchResult>& results) {
  std::printf("%-9s %8s %9s %11s %11s %7s %7s  %s\n", "path", "page", "moved", "rate", "reference", "ratio",
              "target", "reference is");
  for (const BenchResult& r : results) {
    std::printf("%-9s %8s %9s %11s %11s %6.1f%% %6.0f%%%s %s\n", r.path.c_str(),
                format_bytes(static_cast<double>(r.page_bytes)).c_str(),
                format_bytes(static_cast<double>(r.bytes)).c_str(), rate_text(r.bytes_per_s()).c_str(),
                rate_text(r.reference_bytes_per_s).c_str(), 100 * r.fraction(), 100 * r.target,
                r.meets_target() ? " " : "!", r.reference.c_str());
  }
}

void run(const BenchArguments& arguments) {
  BenchOptions options;
  options.page_sizes = parse_size_list("--page-sizes", arguments.page_sizes);
  options.disk_page_sizes = parse_size_list("--disk-page-sizes", arguments.disk_page_sizes);
  options.batch_bytes = parse_size_list("--batch", arguments.batch).front();
  options.disk_bytes = parse_size_list("--disk-batch", arguments.disk_batch).front();
  options.directory = arguments.directory;
  options.queue_depth = arguments.queue_depth;
  std::printf("device: %s\n", gpu::current_device_description().c_str());
  std::vector<BenchResult> results = run_offload_bench(options);
  if (!arguments.skip_disk) {
    for (const BenchResult& r : run_disk_bench(options)) results.push_back(r);
  }
  print(results);
  if (!arguments.out.empty()) {
    write_json_file(arguments.out, {{"tool", "kvtier-hw bench"},
                                    {"command", command_line()},
                                    {"device", gpu::current_device_description()},
                                    {"results", bench_json(results)}});
  }
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto arguments = std::make_shared<BenchArguments>();
  CLI::App* command =
      app.add_subcommand("bench", "Offload, reload and NVMe paths against the measured copy peaks and dd");
  command->add_option("--page-sizes", arguments->page_sizes, "Page sizes for offload/reload")
      ->capture_default_str();
  command->add_option("--batch", arguments->batch, "Bytes moved each way per measurement")
      ->capture_default_str();
  command->add_option("--disk-page-sizes", arguments->disk_page_sizes, "Page sizes for the NVMe store")
      ->capture_default_str();
  command->add_option("--disk-batch", arguments->disk_batch, "Bytes written and read on disk")
      ->capture_default_str();
  command->add_option("--dir", arguments->directory, "Directory on the disk to measure")
      ->capture_default_str()
      ->check(CLI::ExistingDirectory);
  command->add_option("--queue-depth", arguments->queue_depth, "NVMe I/Os in flight")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  command->add_flag("--skip-disk", arguments->skip_disk, "Measure only the PCIe paths");
  command->add_option("--out", arguments->out, "Also write the results as JSON to this file");
  command->callback([arguments] { run(*arguments); });
}

}  // namespace kvtier::hw
