// `kvtier kv`: the KV layout of a model under one or more precision presets.
#include <cmath>
#include <iostream>

#include "sim/cli/commands.h"
#include "sim/cli/output.h"
#include "sim/core/cli_help.h"
#include "sim/core/config_files.h"
#include "sim/core/kv_layout.h"
#include "sim/core/units.h"

namespace kvtier {
namespace {

struct KvOptions {
  std::vector<std::string> models;
  std::vector<std::string> layouts;
  int64_t block_tokens = kDefaultBlockTokens;
  OutputFormat format = OutputFormat::kTable;
};

std::vector<std::string> expand_models(const std::vector<std::string>& models) {
  if (models.size() == 1 && models[0] == "all") return embedded_names("models");
  return models;
}

// Presets that apply to the model: TurboQuant slots need KV heads, so MLA models skip them.
std::vector<std::string> default_layouts(const ModelCard& model) {
  std::vector<std::string> names;
  for (const std::string& name : kv_preset_names()) {
    bool turboquant = name.starts_with("turboquant");
    if (!(turboquant && model.attention == AttentionKind::kMla)) names.push_back(name);
  }
  return names;
}

nlohmann::json layout_json(const ModelCard& model, const KvLayout& layout, int64_t block_tokens) {
  nlohmann::json groups = nlohmann::json::array();
  for (const LayerGroup& g : layout.groups) {
    groups.push_back({{"first_layer", g.first_layer},
                      {"layers", g.layer_count},
                      {"encoding", g.encoding.name()},
                      {"bytes_per_token_per_layer", g.bytes_per_token_per_layer},
                      {"bytes_per_token", g.bytes_per_token()}});
  }
  return {{"name", layout.name},
          {"bytes_per_token", layout.bytes_per_token()},
          {"block_tokens", block_tokens},
          {"bytes_per_block", layout.bytes_per_block(block_tokens)},
          {"compression_vs_bf16", layout.compression_vs_bf16(model)},
          {"groups", groups}};
}

// "3.19x smaller than bf16", "the size of bf16", "2.00x larger than bf16".
std::string size_against_bf16(double compression) {
  if (std::abs(compression - 1) < 0.005) return "the size of bf16";
  if (compression > 1) return format_ratio(compression) + " smaller than bf16";
  return format_ratio(1 / compression) + " larger than bf16";
}

void print_layout(const ModelCard& model, const KvLayout& layout, int64_t block_tokens) {
  std::cout << model.name << ", KV layout " << layout.name << "\n";
  Table table({"layers", "encoding", "bytes/token/layer", "bytes/token"});
  for (const LayerGroup& g : layout.groups) {
    table.add_row({std::to_string(g.first_layer) + "-" + std::to_string(g.first_layer + g.layer_count - 1),
                   g.encoding.name(), with_commas(g.bytes_per_token_per_layer),
                   with_commas(g.bytes_per_token())});
  }
  table.print(std::cout);
  std::cout << "total " << with_commas(layout.bytes_per_token()) << " B/token ("
            << format_bytes(static_cast<double>(layout.bytes_per_token())) << "), "
            << format_bytes(static_cast<double>(layout.bytes_per_block(block_tokens))) << " per "
            << with_commas(block_tokens) << "-token block, "
            << size_against_bf16(layout.compression_vs_bf16(model)) << "\n\n";
}

struct ModelLayouts {
  ModelCard model;
  std::vector<KvLayout> layouts;
};

// Every model and layout is read, and its block size checked, before anything prints: bad input leaves
// no half table behind its error.
std::vector<ModelLayouts> resolve_all(const KvOptions& options) {
  std::vector<ModelLayouts> all;
  for (const std::string& name : expand_models(options.models)) {
    ModelLayouts entry{parse_model_card(load_config(name, "models")), {}};
    for (const std::string& spec : options.layouts.empty() ? default_layouts(entry.model) : options.layouts) {
      entry.layouts.push_back(resolve_kv_layout(entry.model, spec));
      entry.layouts.back().bytes_per_block(options.block_tokens);  // throws where a block overflows
    }
    all.push_back(std::move(entry));
  }
  return all;
}

void run_kv(const KvOptions& options) {
  nlohmann::json models = nlohmann::json::array();
  for (const ModelLayouts& entry : resolve_all(options)) {
    nlohmann::json layouts = nlohmann::json::array();
    for (const KvLayout& layout : entry.layouts) {
      if (options.format == OutputFormat::kJson) {
        layouts.push_back(layout_json(entry.model, layout, options.block_tokens));
      } else {
        print_layout(entry.model, layout, options.block_tokens);
      }
    }
    models.push_back({{"model", entry.model.name}, {"layers", entry.model.layers}, {"layouts", layouts}});
  }
  if (options.format == OutputFormat::kJson) std::cout << models.dump(2) << "\n";
}

void add_kv_command(CLI::App& app) {
  auto options = std::make_shared<KvOptions>();
  CLI::App* command = app.add_subcommand("kv", "Print a model's KV layout: bytes per token per layer group");
  command->add_option("--model", options->models, "Model card file or built-in name; 'all' for every card")
      ->required()
      ->delimiter(',');
  command->add_option("--kv", options->layouts, "Presets or precision-map files (default: every preset)")
      ->delimiter(',');
  command->add_option("--block-tokens", options->block_tokens, "Tokens per cache block")
      ->capture_default_str()
      ->transform(token_count_suffixes())
      ->check(CLI::PositiveNumber);
  add_format_option(*command, options->format);
  command->callback([options] { run_kv(*options); });
}

const CommandRegistration registration(10, add_kv_command);

}  // namespace
}  // namespace kvtier
