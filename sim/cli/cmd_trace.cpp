// `kvtier trace`: statistics of a request trace, conversion between trace formats, and the synthetic
// agent-session generator (traces/, docs/traces.md).
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "sim/cli/commands.h"
#include "sim/cli/output.h"
#include "sim/core/cli_help.h"
#include "sim/core/config_files.h"
#include "sim/workload/agent_workload.h"
#include "sim/workload/trace_convert.h"
#include "sim/workload/trace_input.h"
#include "sim/workload/trace_reader.h"
#include "sim/workload/trace_stats.h"

namespace kvtier {
namespace {

// Below this size `trace stats` follows every block for reuse times; above, a 1-in-64 sample keeps it
// fast (a single hot id, such as a shared first block, weighs more in the exact count than in a sample).
// A pipe is looked into up to this size to decide.
constexpr uint64_t kExactReuseBytes = uint64_t{32} << 20;

struct ReadFlags {
  std::string trace_format = "auto";
  int64_t block_tokens = 0;
  bool skip_bad_lines = false;
};

void add_read_flags(CLI::App& command, ReadFlags& flags) {
  command
      .add_option("--trace-format", flags.trace_format,
                  "mooncake, bailian, native or auto (from the first line)")
      ->capture_default_str();
  command
      .add_option("--block-tokens", flags.block_tokens,
                  "Re-block the ids to this many tokens (0: the trace's own; native lengths: 256)")
      ->transform(token_count_suffixes())
      ->check(CLI::NonNegativeNumber);
  command.add_flag("--skip-bad-lines", flags.skip_bad_lines,
                   "Skip malformed lines and count them (default: stop)");
}

TraceReadOptions read_options(const std::string& path, const ReadFlags& flags) {
  TraceReadOptions options;
  options.format =
      flags.trace_format == "auto" ? detect_trace_format(path) : parse_trace_format(flags.trace_format);
  options.block_tokens = flags.block_tokens;
  options.skip_bad_lines = flags.skip_bad_lines;
  return options;
}

// Writes through a temporary file renamed into place, so a failed run leaves no half-written output.
template <typename Writer>
void write_atomically(const std::string& path, Writer write) {
  std::string temporary = path + ".tmp-" + std::to_string(::getpid());
  try {
    std::ofstream out(temporary, std::ios::binary);
    if (!out) throw ConfigError(path + ": cannot write");
    write(out);
    out.close();
    if (!out) throw ConfigError(path + ": write failed");
    std::filesystem::rename(temporary, path);
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove(temporary, ignored);
    throw;
  }
}

std::string percent(double fraction) {
  return fixed("%.1f %%", 100.0 * fraction);
}

nlohmann::json lengths_json(const LengthSummary& s) {
  return {{"mean", s.mean}, {"p50", s.p50}, {"p90", s.p90}, {"p99", s.p99}, {"max", s.max}};
}

nlohmann::json stats_json(const std::string& path, TraceFormat format, const TraceStats& s) {
  nlohmann::json reuse = nlohmann::json::array();
  for (const ReuseBucket& b : s.reuse) reuse.push_back({{"range", b.label}, {"blocks", b.blocks}});
  nlohmann::json growth = nlohmann::json::array();
  for (const TurnGrowthRow& g : s.growth) {
    growth.push_back({{"first_turn", g.first_turn},
                      {"last_turn", g.last_turn},
                      {"requests", g.requests},
                      {"mean_input_tokens", g.mean_input_tokens}});
  }
  return {
      {"file", path},
      {"format", trace_format_name(format)},
      {"requests", s.requests},
      {"sessions", s.sessions},
      {"duration_s", s.duration_s},
      {"block_tokens", s.block_tokens},
      {"input_tokens", lengths_json(s.input_tokens)},
      {"output_tokens", lengths_json(s.output_tokens)},
      {"blocks", s.total_blocks},
      {"unique_blocks", s.unique_blocks},
      {"max_prefix_hit_rate", {{"blocks", s.block_hit_rate()}, {"tokens", s.token_hit_rate()}}},
      {"reuse_time", {{"sampling", s.reuse_sampling}, {"sampled_hit_blocks_by_time_since_last_use", reuse}}},
      {"context_growth",
       {{"mean_tokens_per_turn", s.mean_growth_tokens}, {"samples", s.growth_samples}, {"by_turn", growth}}},
      {"prefix_violations", s.prefix_violations},
      {"skipped_lines", s.skipped_lines}};
}

void print_stats(const std::string& path, TraceFormat format, const TraceStats& s) {
  std::cout << path << " (" << trace_format_name(format) << ", " << s.block_tokens << "-token blocks)\n";
  Table summary({"", "value"});
  summary.add_row({"requests", with_commas(s.requests)});
  summary.add_row({"sessions", s.sessions ? with_commas(s.sessions) : "none in trace"});
  summary.add_row({"duration", format_duration(s.duration_s)});
  summary.add_row({"blocks / unique", with_commas(s.total_blocks) + " / " + with_commas(s.unique_blocks)});
  summary.add_row({"max prefix hit rate, blocks", percent(s.block_hit_rate())});
  summary.add_row({"max prefix hit rate, tokens", percent(s.token_hit_rate())});
  if (s.growth_samples)
    summary.add_row({"context growth per turn", with_commas(std::llround(s.mean_growth_tokens)) + " tokens"});
  if (s.prefix_violations)
    summary.add_row({"requests breaking the prefix property", with_commas(s.prefix_violations)});
  if (s.skipped_lines) summary.add_row({"skipped bad lines", with_commas(s.skipped_lines)});
  summary.print(std::cout);

  std::cout << "\n";
  Table lengths({"tokens", "mean", "p50", "p90", "p99", "max"});
  for (auto [name, l] : {std::pair{"input", s.input_tokens}, std::pair{"output", s.output_tokens}}) {
    lengths.add_row({name, with_commas(std::llround(l.mean)), with_commas(l.p50), with_commas(l.p90),
                     with_commas(l.p99), with_commas(l.max)});
  }
  lengths.print(std::cout);

  std::cout << "\nreuse time of hit blocks (time since the block's previous use";
  if (s.reuse_sampling > 1) std::cout << "; 1 in " << s.reuse_sampling << " block ids sampled";
  std::cout << ")\n";
  Table reuse({"since last use", s.reuse_sampling > 1 ? "sampled blocks" : "blocks", "share"});
  int64_t counted = 0;
  for (const ReuseBucket& b : s.reuse) counted += b.blocks;
  for (const ReuseBucket& b : s.reuse) {
    reuse.add_row(
        {b.label, with_commas(b.blocks), percent(counted ? double(b.blocks) / double(counted) : 0)});
  }
  reuse.print(std::cout);

  if (!s.growth.empty()) {
    std::cout << "\ncontext by turn\n";
    Table growth({"turns", "requests", "mean input tokens"});
    for (const TurnGrowthRow& g : s.growth) {
      std::string turns = g.first_turn == g.last_turn
                              ? std::to_string(g.first_turn)
                              : std::to_string(g.first_turn) + "-" + std::to_string(g.last_turn);
      growth.add_row({turns, with_commas(g.requests), with_commas(std::llround(g.mean_input_tokens))});
    }
    growth.print(std::cout);
  }
}

void add_stats(CLI::App& trace) {
  struct Options {
    std::string path;
    ReadFlags read;
    int64_t reuse_sampling = 0;  // 0: by file size
    OutputFormat format = OutputFormat::kTable;
  };
  auto o = std::make_shared<Options>();
  CLI::App* command = trace.add_subcommand("stats",
                                           "Requests, lengths, unique blocks, best-case prefix hit rate, "
                                           "reuse times and context growth of a trace");
  command->add_option("file", o->path, "Trace file (JSON lines; - reads standard input)")->required();
  add_read_flags(*command, o->read);
  command->add_option("--reuse-sampling", o->reuse_sampling,
                      "Follow one block id in N for reuse times (a power of two; 1: every block; "
                      "default: every block for files under 32 MiB, else 1 in 64)");
  add_format_option(*command, o->format);
  command->callback([o] {
    TraceReadOptions options = read_options(o->path, o->read);
    TraceStatsOptions stats_options;
    stats_options.reuse_sampling = o->reuse_sampling > 0                                 ? o->reuse_sampling
                                   : trace_input_smaller_than(o->path, kExactReuseBytes) ? 1
                                                                                         : 64;
    std::unique_ptr<RequestStream> stream = open_trace(o->path, options);
    TraceStats stats = compute_trace_stats(*stream, stats_options);
    if (o->format == OutputFormat::kJson) {
      std::cout << stats_json(trace_input_name(o->path), options.format, stats).dump(2) << "\n";
    } else {
      print_stats(trace_input_name(o->path), options.format, stats);
    }
  });
}

void convert(const std::string& in, const std::string& out, const std::string& to, const ReadFlags& flags) {
  if (to != "mooncake" && to != "native") throw ConfigError("--to " + to + ": expected mooncake or native");
  TraceReadOptions options = read_options(in, flags);
  int64_t written = 0;
  write_atomically(out, [&](std::ostream& file) {
    written =
        to == "mooncake" ? convert_to_mooncake(in, options, file) : convert_to_native(in, options, file);
  });
  std::cerr << "wrote " << with_commas(written) << " requests to " << out << "\n";
}

void add_convert(CLI::App& trace) {
  struct Options {
    std::string in, out, to;
    ReadFlags read;
  };
  auto o = std::make_shared<Options>();
  CLI::App* command = trace.add_subcommand("convert", "Convert a trace to the Mooncake or the native format");
  command->add_option("input", o->in, "Trace to read (- reads standard input)")->required();
  command->add_option("output", o->out, "File to write")->required();
  command->add_option("--to", o->to, "mooncake or native")->required();
  add_read_flags(*command, o->read);
  command->callback([o] { convert(o->in, o->out, o->to, o->read); });
}

void add_generate(CLI::App& trace) {
  struct Options {
    std::string out;
    std::string workload = "agent-default";
    int64_t requests = 10000;
    std::optional<int64_t> seed;
  };
  auto o = std::make_shared<Options>();
  CLI::App* command =
      trace.add_subcommand("generate", "Write a synthetic coding-agent trace (native format)");
  command->add_option("output", o->out, "File to write")->required();
  command->add_option("--workload", o->workload, "Workload file or built-in name (configs/workloads)")
      ->capture_default_str();
  command->add_option("--requests", o->requests, "Turns to write, in arrival order")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  command->add_option("--seed", o->seed, "Override the workload's seed")->check(CLI::NonNegativeNumber);
  command->callback([o] {
    AgentWorkload workload = parse_agent_workload(load_config(o->workload, "configs/workloads"));
    if (o->seed) workload.seed = static_cast<uint64_t>(*o->seed);
    int64_t sessions = 0;
    write_atomically(o->out,
                     [&](std::ostream& file) { sessions = write_agent_trace(workload, o->requests, file); });
    std::cerr << "wrote " << with_commas(o->requests) << " turns of " << with_commas(sessions)
              << " sessions to " << o->out << "\n";
  });
}

void add_trace_command(CLI::App& app) {
  CLI::App* trace = app.add_subcommand("trace", "Inspect, convert and generate request traces");
  trace->require_subcommand(1);
  add_stats(*trace);
  add_convert(*trace);
  add_generate(*trace);
}

const CommandRegistration registration(30, add_trace_command);

}  // namespace
}  // namespace kvtier
