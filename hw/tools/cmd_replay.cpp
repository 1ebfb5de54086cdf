// kvtier-hw replay: a trace through the GPU's tiered store, timed, next to the analytic cache model.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <stdexcept>

#include "hw/gpu/check.h"
#include "hw/tools/hw_commands.h"
#include "hw/tools/store_replay.h"
#include "hw/tools/tool_support.h"
#include "sim/core/cli_help.h"
#include "sim/core/units.h"

namespace kvtier::hw {
namespace {

struct ReplayArguments {
  ReplayOptions options;
  std::string out;
};

nlohmann::json hits_json(const ReplayReport& r, const std::vector<HitCount>& hits) {
  nlohmann::json rows = nlohmann::json::array();
  for (size_t t = 0; t < hits.size(); ++t) {
    rows.push_back({{"tier", r.tiers[t].name}, {"blocks", hits[t].blocks}, {"tokens", hits[t].tokens}});
  }
  return rows;
}

nlohmann::json events_json(const ReplayReport& r) {
  nlohmann::json rows = nlohmann::json::array();
  const int tiers = static_cast<int>(r.tiers.size());
  for (int kind = 0; kind < kCacheEventKinds; ++kind) {
    for (int from = -1; from < tiers; ++from) {
      for (int to = -1; to < tiers; ++to) {
        const TrafficTotals::Flow& flow = r.events.flow(static_cast<CacheEventKind>(kind), from, to);
        if (flow.blocks == 0) continue;
        rows.push_back({{"kind", event_kind_name(static_cast<CacheEventKind>(kind))},
                        {"from", from < 0 ? "-" : r.tiers[from].name},
                        {"to", to < 0 ? "-" : r.tiers[to].name},
                        {"blocks", flow.blocks},
                        {"bytes", std::max(flow.from_bytes, flow.to_bytes)}});
      }
    }
  }
  return rows;
}

nlohmann::json transfers_json(const ReplayReport& r) {
  nlohmann::json rows = nlohmann::json::array();
  for (int p = 0; p < kTransferPaths; ++p) {
    const PathTotals& t = r.transfers[static_cast<size_t>(p)];
    if (t.blocks == 0) continue;
    rows.push_back({{"path", transfer_path_name(static_cast<TransferPath>(p))},
                    {"blocks", t.blocks},
                    {"bytes", t.bytes},
                    {"seconds", t.seconds},
                    {"bytes_per_s", t.seconds > 0 ? static_cast<double>(t.bytes) / t.seconds : 0.0}});
  }
  return rows;
}

// The transfer time of one request (admit and release), at quantile q of all requests.
double quantile(std::vector<double> seconds, double q) {
  if (seconds.empty()) return 0;
  const size_t k = static_cast<size_t>(q * static_cast<double>(seconds.size() - 1));
  std::nth_element(seconds.begin(), seconds.begin() + static_cast<ptrdiff_t>(k), seconds.end());
  return seconds[k];
}

nlohmann::json report_json(const ReplayReport& r, const ReplayOptions& o) {
  nlohmann::json tiers = nlohmann::json::array();
  for (const TierSpec& t : r.tiers) {
    tiers.push_back({{"name", t.name},
                     {"medium", medium_name(t.medium)},
                     {"kv", t.layout.name},
                     {"capacity_blocks", t.capacity_blocks()},
                     {"capacity_bytes", t.capacity_bytes},
                     {"policy", policy_name(t.policy)}});
  }
  double total = 0;
  for (double s : r.admit_seconds) total += s;
  return {{"tool", "kvtier-hw replay"},
          {"command", command_line()},
          {"device", gpu::current_device_description()},
          {"trace", r.trace},
          {"model", o.model},
          {"tiers_file", o.tiers},
          {"block_tokens", r.block_tokens},
          {"page_bytes", r.page_bytes},
          {"tiers", tiers},
          {"requests", r.requests},
          {"truncated_requests", r.model.truncated_requests},
          {"hits",
           {{"store", hits_json(r, r.store_hits)},
            {"cache_model", hits_json(r, r.model.hits_by_tier)},
            {"agree", r.hits_agree()}}},
          {"events", events_json(r)},
          {"transfers", transfers_json(r)},
          {"batches", r.batches},
          {"request_transfer_seconds",
           {{"total", total},
            {"p50", quantile(r.admit_seconds, 0.5)},
            {"p99", quantile(r.admit_seconds, 0.99)},
            {"max", quantile(r.admit_seconds, 1.0)}}},
          {"verify", o.verify ? nlohmann::json{{"blocks", r.verified_blocks},
                                               {"mismatched_blocks", r.mismatched_blocks}}
                              : nlohmann::json(nullptr)}};
}

void print(const ReplayReport& r) {
  std::printf("%s: %lld requests, %lld-token blocks, %s pages\n", r.trace.c_str(),
              static_cast<long long>(r.requests), static_cast<long long>(r.block_tokens),
              format_bytes(static_cast<double>(r.page_bytes)).c_str());
  std::printf("%-6s %14s %14s\n", "tier", "store hits", "model hits");
  for (size_t t = 0; t < r.tiers.size(); ++t) {
    std::printf("%-6s %14lld %14lld\n", r.tiers[t].name.c_str(),
                static_cast<long long>(r.store_hits[t].blocks),
                static_cast<long long>(r.model.hits_by_tier[t].blocks));
  }
  std::printf("%-13s %9s %10s %10s %12s\n", "path", "blocks", "bytes", "seconds", "rate");
  for (int p = 0; p < kTransferPaths; ++p) {
    const PathTotals& t = r.transfers[static_cast<size_t>(p)];
    if (t.blocks == 0) continue;
    std::printf("%-13s %9lld %10s %10.4f %12s\n", transfer_path_name(static_cast<TransferPath>(p)),
                static_cast<long long>(t.blocks), format_bytes(static_cast<double>(t.bytes)).c_str(),
                t.seconds, t.seconds > 0 ? rate_text(static_cast<double>(t.bytes) / t.seconds).c_str() : "-");
  }
  std::printf("hits %s the cache model's\n", r.hits_agree() ? "equal" : "DIFFER FROM");
}

void run(const ReplayArguments& arguments) {
  std::printf("device: %s\n", gpu::current_device_description().c_str());
  const ReplayReport report = run_replay(arguments.options);
  print(report);
  if (!arguments.out.empty()) write_json_file(arguments.out, report_json(report, arguments.options));
  if (!report.hits_agree())
    throw std::runtime_error("the store's hits per tier differ from the cache model's");
  if (report.mismatched_blocks > 0) {
    throw std::runtime_error(std::to_string(report.mismatched_blocks) +
                             " block(s) did not read back from HBM");
  }
}

}  // namespace

void add_replay_command(CLI::App& app) {
  auto a = std::make_shared<ReplayArguments>();
  ReplayOptions& o = a->options;
  CLI::App* command = app.add_subcommand(
      "replay",
      "Replay a trace through the GPU's tiered store (placement by the cache model), timed, and "
      "compare its hits with the analytic cache's");
  command->add_option("--trace", o.trace, "Trace file (default: the synthetic agent workload)");
  command->add_option("--trace-format", o.trace_format, "auto, mooncake, bailian or native")
      ->capture_default_str();
  command->add_option("--model", o.model, "Model card (name or file)")->capture_default_str();
  command->add_option("--tiers", o.tiers,
                      "Tier hierarchy file or built-in name (configs/tiers), as kvtier hitrate --tiers reads it: "
                      "hbm, then dram and nvme; below HBM, tier 0's KV layout or, under bf16, one int4 layout")
      ->capture_default_str();
  command
      ->add_option("--block-tokens", o.block_tokens,
                   "Tokens per block (0: an LMCache tier file's chunk_size, else the trace's own)")
      ->capture_default_str()
      ->transform(token_count_suffixes())
      ->check(CLI::NonNegativeNumber);
  command->add_option("--spare-blocks", o.spare_blocks, "Pages per tier beyond its capacity, for batching")
      ->capture_default_str()
      ->transform(token_count_suffixes())
      ->check(CLI::NonNegativeNumber);
  command->add_option("--dir", o.directory, "Directory for the NVMe store's file (a disk, not tmpfs)")
      ->capture_default_str()
      ->check(CLI::ExistingDirectory);
  command->add_option("--requests", o.requests, "Requests to replay (0: the whole trace)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  command->add_option("--seed", o.seed, "Seed of the synthetic workload")->capture_default_str();
  command->add_flag("--verify", o.verify,
                    "Write block patterns into computed pages and check every request's pages");
  command->add_option("--out", a->out, "Also write the results as JSON to this file");
  command->callback([a] { run(*a); });
}

}  // namespace kvtier::hw
