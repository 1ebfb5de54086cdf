// `kvtier hitrate`: replay a trace through the cache alone, no timing. Either one cache at many
// capacities (a hit-rate curve per policy, LRU in one stack-distance pass, optionally plotted), or a tier
// hierarchy from YAML (hits per tier, bytes moved between tiers). Both report the theoretical maximum.
#include <iostream>
#include <limits>

#include "sim/app/hit_rate_plot.h"
#include "sim/cache/hit_rate.h"
#include "sim/cli/commands.h"
#include "sim/cli/output.h"
#include "sim/core/checked_math.h"
#include "sim/core/cli_help.h"
#include "sim/core/config_files.h"
#include "sim/core/units.h"
#include "sim/workload/trace_reader.h"

namespace kvtier {
namespace {

struct HitrateOptions {
  std::string trace;
  std::string trace_format = "auto";
  int64_t block_tokens = 0;
  bool skip_bad_lines = false;
  std::string model;
  std::string kv = "bf16";
  std::vector<int64_t> capacity_tokens;
  std::vector<int64_t> capacity_blocks;
  std::vector<std::string> capacity_bytes;
  std::string tiers;
  std::vector<std::string> policies;
  std::string plot;
  OutputFormat format = OutputFormat::kTable;
};

struct LoadedTrace {
  TraceFormat format;
  int64_t block_tokens = 0;
  int64_t skipped_lines = 0;
  std::vector<Request> requests;
  LruCurve bound;  // the infinite cache, from the same pass
};

LoadedTrace load_trace(const HitrateOptions& o) {
  TraceReadOptions read;
  read.format = o.trace_format == "auto" ? detect_trace_format(o.trace) : parse_trace_format(o.trace_format);
  read.block_tokens = o.block_tokens;
  read.skip_bad_lines = o.skip_bad_lines;
  auto stream = open_trace(o.trace, read);
  LoadedTrace trace{read.format, stream->block_tokens(), 0, {}, {}};
  Request request;
  std::vector<int64_t> tokens;
  while (stream->next(request)) {
    tokens_per_block(request, trace.block_tokens, tokens);
    trace.bound.add(request.block_ids, tokens);
    trace.requests.push_back(request);
  }
  trace.skipped_lines = stream->skipped_lines();
  return trace;
}

double rate(int64_t part, int64_t whole) {
  return whole > 0 ? static_cast<double>(part) / static_cast<double>(whole) : 0;
}
std::string percent(int64_t part, int64_t whole) {
  return fixed("%.1f%%", 100 * rate(part, whole));
}

std::vector<PolicyKind> parse_policies(const std::vector<std::string>& names) {
  std::vector<PolicyKind> kinds;
  for (const std::string& name : names) {
    PolicyKind kind;
    if (!parse_policy_name(name, kind)) {
      std::string hint = closest_match(name, policy_names());
      throw ConfigError("--policy: unknown policy '" + name + "', expected lru, lfu, arc or s3fifo" +
                        (hint.empty() ? "" : " (did you mean '" + hint + "'?)"));
    }
    kinds.push_back(kind);
  }
  return kinds;
}

nlohmann::json trace_json(const HitrateOptions& o, const LoadedTrace& t) {
  const int64_t infinite = std::numeric_limits<int64_t>::max();
  return {{"trace",
           {{"path", o.trace},
            {"format", trace_format_name(t.format)},
            {"requests", t.requests.size()},
            {"block_tokens", t.block_tokens},
            {"blocks", t.bound.total_blocks()},
            {"distinct_blocks", t.bound.distinct_blocks()},
            {"tokens", t.bound.total_tokens()},
            {"skipped_lines", t.skipped_lines}}},
          {"theoretical_max",
           {{"hit_blocks", t.bound.hit_blocks(infinite)},
            {"hit_tokens", t.bound.hit_tokens(infinite)},
            {"block_hit_rate", rate(t.bound.hit_blocks(infinite), t.bound.total_blocks())},
            {"token_hit_rate", rate(t.bound.hit_tokens(infinite), t.bound.total_tokens())}}}};
}

void print_trace_summary(const nlohmann::json& j) {
  const auto& t = j["trace"];
  const auto& max = j["theoretical_max"];
  std::cout << t["path"].get<std::string>() << ": " << with_commas(t["requests"].get<int64_t>())
            << " requests, " << with_commas(t["blocks"].get<int64_t>()) << " block accesses ("
            << with_commas(t["distinct_blocks"].get<int64_t>()) << " distinct, "
            << t["block_tokens"].get<int64_t>() << "-token blocks)\ntheoretical maximum (infinite cache): "
            << fixed("%.1f%%", 100 * max["token_hit_rate"].get<double>()) << " of tokens, "
            << fixed("%.1f%%", 100 * max["block_hit_rate"].get<double>()) << " of blocks\n\n";
}

// A capacity of `bytes` (from --capacity) as int64_t bytes; the limit is what int64_t holds.
int64_t capacity_bytes(const std::string& text) {
  try {
    std::optional<int64_t> bytes = checked_to_int64(parse_bytes(text));
    if (!bytes) {
      throw ConfigError("--capacity: " + text + " is more than " + std::to_string(kMaxCount) +
                        " B (8 EiB), the largest capacity kvtier counts");
    }
    return *bytes;
  } catch (const UnitError& e) {
    throw ConfigError(std::string("--capacity: ") + e.what());
  }
}

// Capacities in blocks from whichever of tokens, blocks or bytes was given. The report gives each in
// tokens and bytes too, so blocks × tokens and blocks × bytes per block must fit int64_t.
std::vector<int64_t> capacities_in_blocks(const HitrateOptions& o, int64_t block_tokens,
                                          int64_t bytes_per_block) {
  std::vector<int64_t> blocks;
  auto add = [&](int64_t count, const char* option, int64_t given) {
    if (!checked_mul(count, bytes_per_block) || !checked_mul(count, block_tokens)) {
      throw ConfigError(std::string(option) + ": " + std::to_string(given) + " is " + std::to_string(count) +
                        " blocks of " + std::to_string(bytes_per_block) + " B, more than " +
                        std::to_string(kMaxCount) + " B (8 EiB), the largest capacity kvtier counts");
    }
    blocks.push_back(count);
  };
  for (int64_t tokens : o.capacity_tokens) add(tokens / block_tokens, "--capacity-tokens", tokens);
  for (int64_t count : o.capacity_blocks) add(count, "--capacity-blocks", count);
  for (const std::string& text : o.capacity_bytes) blocks.push_back(capacity_bytes(text) / bytes_per_block);
  return blocks;
}

void run_curves(const HitrateOptions& o, const LoadedTrace& trace, const ModelCard& model) {
  KvLayout layout = resolve_kv_layout(model, o.kv);
  TierSpec tier = single_tier(layout, trace.block_tokens, 0, PolicyKind::kLru);
  std::vector<int64_t> capacities = capacities_in_blocks(o, trace.block_tokens, tier.bytes_per_block());
  nlohmann::json out = trace_json(o, trace);
  out["model"] = model.name;
  out["kv"] = layout.name;
  out["bytes_per_block"] = tier.bytes_per_block();
  out["curves"] = nlohmann::json::array();
  HitRatePlot plot{model.name + ", " + layout.name + " KV: prefix hit rate vs cache size",
                   "cache capacity (tokens)",
                   {},
                   out["theoretical_max"]["token_hit_rate"].get<double>()};
  Table table({"policy", "capacity (tokens)", "blocks", "bytes", "block hits", "token hits"});
  for (PolicyKind policy :
       parse_policies(o.policies.empty() ? std::vector<std::string>{"lru"} : o.policies)) {
    tier.policy = policy;
    nlohmann::json points = nlohmann::json::array();
    PlotSeries series{policy_name(policy), {}, {}};
    for (const CurvePoint& p : hit_rate_curve(trace.requests, tier, capacities)) {
      int64_t tokens = p.capacity_blocks * trace.block_tokens;
      int64_t bytes = p.capacity_blocks * tier.bytes_per_block();
      points.push_back({{"capacity_tokens", tokens},
                        {"capacity_blocks", p.capacity_blocks},
                        {"capacity_bytes", bytes},
                        {"hit_blocks", p.hits.blocks},
                        {"hit_tokens", p.hits.tokens},
                        {"block_hit_rate", rate(p.hits.blocks, trace.bound.total_blocks())},
                        {"token_hit_rate", rate(p.hits.tokens, trace.bound.total_tokens())}});
      table.add_row({policy_name(policy), with_commas(tokens), with_commas(p.capacity_blocks),
                     format_bytes(static_cast<double>(bytes)),
                     percent(p.hits.blocks, trace.bound.total_blocks()),
                     percent(p.hits.tokens, trace.bound.total_tokens())});
      series.x.push_back(static_cast<double>(std::max<int64_t>(tokens, 1)));
      series.y.push_back(rate(p.hits.tokens, trace.bound.total_tokens()));
    }
    out["curves"].push_back({{"policy", policy_name(policy)}, {"points", points}});
    plot.series.push_back(std::move(series));
  }
  if (!o.plot.empty()) write_hit_rate_plot(plot, o.plot);
  if (o.format == OutputFormat::kJson) {
    std::cout << out.dump(2) << "\n";
    return;
  }
  print_trace_summary(out);
  std::cout << model.name << ", KV " << layout.name << " ("
            << format_bytes(static_cast<double>(tier.bytes_per_block())) << " per block)\n";
  table.print(std::cout);
  if (!o.plot.empty()) std::cout << "\nplot: " << o.plot << "\n";
}

nlohmann::json replay_json(const ReplayResult& r, const std::vector<TierSpec>& tiers) {
  nlohmann::json out = {{"requests", r.requests},
                        {"truncated_requests", r.truncated_requests},
                        {"hit_blocks", r.hits().blocks},
                        {"hit_tokens", r.hits().tokens},
                        {"block_hit_rate", rate(r.hits().blocks, r.total.blocks)},
                        {"token_hit_rate", rate(r.hits().tokens, r.total.tokens)}};
  out["tiers"] = nlohmann::json::array();
  for (size_t t = 0; t < tiers.size(); ++t) {
    out["tiers"].push_back({{"name", tiers[t].name},
                            {"kv", tiers[t].layout.name},
                            {"policy", policy_name(tiers[t].policy)},
                            {"capacity_bytes", tiers[t].capacity_bytes},
                            {"capacity_blocks", tiers[t].capacity_blocks()},
                            {"hit_blocks", r.hits_by_tier[t].blocks},
                            {"hit_tokens", r.hits_by_tier[t].tokens},
                            {"token_hit_rate", rate(r.hits_by_tier[t].tokens, r.total.tokens)}});
  }
  out["traffic"] = nlohmann::json::array();
  for (int kind = 0; kind < kCacheEventKinds; ++kind) {
    for (int from = -1; from < static_cast<int>(tiers.size()); ++from) {
      for (int to = -1; to < static_cast<int>(tiers.size()); ++to) {
        const auto& flow = r.traffic.flow(static_cast<CacheEventKind>(kind), from, to);
        if (flow.blocks == 0) continue;
        out["traffic"].push_back({{"kind", event_kind_name(static_cast<CacheEventKind>(kind))},
                                  {"from", from < 0 ? "prefill" : tiers[from].name},
                                  {"to", to < 0 ? "dropped" : tiers[to].name},
                                  {"blocks", flow.blocks},
                                  {"bytes_read", flow.from_bytes},
                                  {"bytes_written", flow.to_bytes}});
      }
    }
  }
  return out;
}

void print_replay(const nlohmann::json& run, int64_t total_tokens) {
  Table tiers({"tier", "kv", "policy", "capacity", "blocks", "block hits", "token hits"});
  for (const auto& t : run["tiers"]) {
    tiers.add_row({t["name"], t["kv"], t["policy"], format_bytes(t["capacity_bytes"].get<double>()),
                   with_commas(t["capacity_blocks"].get<int64_t>()),
                   with_commas(t["hit_blocks"].get<int64_t>()),
                   percent(t["hit_tokens"].get<int64_t>(), total_tokens)});
  }
  tiers.print(std::cout);
  std::cout << "all tiers: " << fixed("%.1f%%", 100 * run["token_hit_rate"].get<double>()) << " of tokens, "
            << fixed("%.1f%%", 100 * run["block_hit_rate"].get<double>()) << " of blocks; "
            << run["truncated_requests"].get<int64_t>() << " requests longer than tier 0 were truncated\n\n";
  Table traffic({"movement", "from", "to", "blocks", "read", "written"});
  for (const auto& f : run["traffic"]) {
    traffic.add_row({f["kind"], f["from"], f["to"], with_commas(f["blocks"].get<int64_t>()),
                     format_bytes(f["bytes_read"].get<double>()),
                     format_bytes(f["bytes_written"].get<double>())});
  }
  traffic.print(std::cout);
}

void run_tiers(const HitrateOptions& o, const LoadedTrace& trace, const ModelCard& model,
               const TierFile& file) {
  std::vector<TierSpec> tiers = parse_tier_file(file, model, trace.block_tokens).tiers;
  std::vector<std::vector<TierSpec>> runs;
  if (o.policies.empty()) runs.push_back(tiers);
  for (PolicyKind policy : parse_policies(o.policies)) {
    runs.push_back(tiers);
    for (TierSpec& tier : runs.back()) tier.policy = policy;
  }
  nlohmann::json out = trace_json(o, trace);
  out["model"] = model.name;
  out["runs"] = nlohmann::json::array();
  for (const auto& run : runs) {
    CacheReplay replay(run);
    for (const Request& request : trace.requests) replay.add(request);
    out["runs"].push_back(replay_json(replay.result(), run));
  }
  if (o.format == OutputFormat::kJson) {
    std::cout << out.dump(2) << "\n";
    return;
  }
  print_trace_summary(out);
  for (const auto& run : out["runs"]) {
    print_replay(run, trace.bound.total_tokens());
    std::cout << "\n";
  }
}

void run_hitrate(const HitrateOptions& o) {
  bool single = !o.capacity_tokens.empty() || !o.capacity_blocks.empty() || !o.capacity_bytes.empty();
  if (single == !o.tiers.empty()) {
    throw ConfigError(
        "hitrate: give capacities (--capacity-tokens, --capacity-blocks or --capacity) or --tiers FILE");
  }
  if (!o.plot.empty() && !single)
    throw ConfigError("hitrate: --plot draws capacity curves; it needs capacities");
  ModelCard model = parse_model_card(load_config(o.model, "models"));
  if (single) {
    run_curves(o, load_trace(o), model);
    return;
  }
  // An LMCache file's chunk_size is the block size unless --block-tokens says otherwise.
  const TierFile file = load_tier_file(o.tiers);
  HitrateOptions read = o;
  if (read.block_tokens == 0 && file.block_tokens) read.block_tokens = *file.block_tokens;
  run_tiers(o, load_trace(read), model, file);
}

void add_hitrate_command(CLI::App& app) {
  auto o = std::make_shared<HitrateOptions>();
  CLI::App* command = app.add_subcommand(
      "hitrate", "Replay a trace through the cache alone: hit rate by capacity or by tier");
  command->add_option("--trace", o->trace, "Trace file (JSON lines)")->required();
  command
      ->add_option("--trace-format", o->trace_format,
                   "mooncake, bailian, native or auto (from the first line)")
      ->capture_default_str();
  command
      ->add_option("--block-tokens", o->block_tokens,
                   "Re-block the trace to this size (default: its own, or an LMCache tier file's chunk_size)")
      ->transform(token_count_suffixes())
      ->check(CLI::NonNegativeNumber);
  command->add_flag("--skip-bad-lines", o->skip_bad_lines,
                    "Skip malformed lines and count them (default: stop)");
  command->add_option("--model", o->model, "Model card file or built-in name")->required();
  command->add_option("--kv", o->kv, "KV preset or precision-map file for --capacity* curves")
      ->capture_default_str();
  command->add_option("--capacity-tokens", o->capacity_tokens, "Cache capacities in tokens (comma list)")
      ->delimiter(',')
      ->transform(token_count_suffixes())
      ->check(CLI::NonNegativeNumber);
  command->add_option("--capacity-blocks", o->capacity_blocks, "Cache capacities in blocks (comma list)")
      ->delimiter(',')
      ->transform(token_count_suffixes())
      ->check(CLI::NonNegativeNumber);
  command
      ->add_option("--capacity", o->capacity_bytes, "Cache capacities in bytes with units, e.g. 40GiB,80GiB")
      ->delimiter(',');
  command->add_option("--tiers", o->tiers,
                      "Tier hierarchy file or built-in name (configs/tiers), kvtier's or an LMCache config");
  command
      ->add_option("--policy", o->policies,
                   "lru, lfu, arc, s3fifo (comma list); with --tiers, for every tier")
      ->delimiter(',');
  command->add_option("--plot", o->plot, "Draw the hit-rate curves to this file (.png, .svg, .pdf)");
  add_format_option(*command, o->format);
  command->callback([o] { run_hitrate(*o); });
}

const CommandRegistration registration(35, add_hitrate_command);

}  // namespace
}  // namespace kvtier
