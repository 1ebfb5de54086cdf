#include "sim/core/kv_layout.h"

#include <filesystem>
#include <map>

#include "sim/core/checked_math.h"

namespace kvtier {
namespace {

// Bounds of the integers a precision map sets; beyond them a layout's bytes would be nonsense long before
// they overflowed, and the int fields would truncate.
constexpr int64_t kMaxGroupSize = int64_t{1} << 24;
constexpr int64_t kMaxSlotAlign = int64_t{1} << 16;
constexpr int64_t kMaxBoundaryLayers = int64_t{1} << 24;  // a card's layer limit

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// a × b for a model's KV bytes; a ConfigError naming the model when it leaves int64_t.
int64_t kv_product(int64_t a, int64_t b, const ModelCard& model) {
  std::optional<int64_t> product = checked_mul(a, b);
  if (!product) throw ConfigError(model.name + ": KV bytes per token overflow 64-bit integers");
  return *product;
}

// A group-quantized vector of `elements` 4-bit values plus a scale (and zero) per group.
int64_t int4_group_bytes(int64_t elements, const Encoding& e, const ModelCard& model) {
  int64_t groups = ceil_div(elements, e.group_size);
  return ceil_div(elements, 2) + kv_product(groups, int64_t{e.scale_bytes} * (e.zero_point ? 2 : 1), model);
}

// The integer at `key` (or `fallback`), which must lie in [low, high].
int bounded_int(const ConfigNode& node, std::string_view key, int64_t fallback, int64_t low, int64_t high,
                const std::string& what) {
  int64_t value = node.integer(key, fallback);
  if (value < low || value > high) {
    node.child(key).fail("expected " + what + " from " + std::to_string(low) + " to " + std::to_string(high) +
                         ", got " + std::to_string(value));
  }
  return static_cast<int>(value);
}

// An encoding by name, with its defaults.
Encoding named_encoding(const ConfigNode& node) {
  std::string name = node.as_choice({"bf16", "fp8", "int4", "turboquant4"});
  if (name == "bf16") return Encoding::of_kind(EncodingKind::kBf16);
  if (name == "fp8") return Encoding::of_kind(EncodingKind::kFp8);
  if (name == "int4") return Encoding::int4(32);
  return Encoding::of_kind(EncodingKind::kTurboQuant4);
}

Encoding parse_encoding(const ConfigNode& node) {
  node.schema_definition("kv_encoding");
  if (node.is_scalar()) return named_encoding(node);
  node.allow_keys({"kind", "group_size", "scale_dtype", "zero_point", "slot_align"});
  Encoding e = named_encoding(node.child("kind"));
  e.group_size = bounded_int(node, "group_size", e.group_size, 1, kMaxGroupSize, "a group size");
  std::string scale = node.choice("scale_dtype", {"fp16", "bf16", "fp32"}, "fp16");
  e.scale_bytes = scale == "fp32" ? 4 : 2;
  e.zero_point = node.boolean("zero_point", e.zero_point);
  e.slot_align = bounded_int(node, "slot_align", e.slot_align, 1, kMaxSlotAlign, "an alignment in bytes");
  return e;
}

// Every group's bytes per token, and their sum, within kMaxKvBytesPerToken: then bytes_per_token() cannot
// overflow, and neither can a block of up to 2^33 tokens.
void check_bytes_per_token(const KvLayout& layout, const ModelCard& model) {
  int64_t total = 0;
  for (const LayerGroup& g : layout.groups) {
    std::optional<int64_t> group = checked_mul(g.bytes_per_token_per_layer, g.layer_count);
    std::optional<int64_t> sum = group ? checked_add(total, *group) : std::nullopt;
    if (!sum || *sum > kMaxKvBytesPerToken) {
      throw ConfigError("KV layout " + layout.name + " of " + model.name + " takes more than " +
                        std::to_string(kMaxKvBytesPerToken) + " B (1 GiB) per token, the limit");
    }
    total = *sum;
  }
}

}  // namespace

std::string Encoding::name() const {
  switch (kind) {
    case EncodingKind::kBf16:
      return "bf16";
    case EncodingKind::kFp8:
      return "fp8";
    case EncodingKind::kInt4Group:
      return "int4-g" + std::to_string(group_size);
    case EncodingKind::kTurboQuant4:
      return "turboquant4";
  }
  return "?";
}

int64_t turboquant_slot_bytes(int head_dim, int slot_align) {
  int64_t packed = ceil_div(head_dim, 2);
  int64_t raw = packed + 2 /* K norm */ + packed + 2 /* V scale */ + 2 /* V zero */;
  return ceil_div(raw, slot_align) * slot_align;
}

int64_t bytes_per_token_per_layer(const ModelCard& model, const Encoding& e) {
  int64_t elements = model.kv_elements_per_layer();
  switch (e.kind) {
    case EncodingKind::kBf16:
      return kv_product(elements, 2, model);
    case EncodingKind::kFp8:
      return elements;
    case EncodingKind::kInt4Group:
      if (model.attention == AttentionKind::kMla) return int4_group_bytes(elements, e, model);
      return kv_product(2 * int64_t{model.kv_heads}, int4_group_bytes(model.head_dim, e, model), model);
    case EncodingKind::kTurboQuant4:
      if (model.attention == AttentionKind::kMla) {
        throw ConfigError(model.name + ": the turboquant4 slot is defined per KV head; MLA has none");
      }
      return kv_product(model.kv_heads, turboquant_slot_bytes(model.head_dim, e.slot_align), model);
  }
  return 0;
}

int64_t KvLayout::bytes_per_token() const {
  int64_t total = 0;
  for (const LayerGroup& g : groups) total += g.bytes_per_token();
  return total;
}

int64_t KvLayout::bytes_per_block(int64_t block_tokens) const {
  std::optional<int64_t> bytes = checked_mul(bytes_per_token(), block_tokens);
  if (!bytes) {
    throw ConfigError("KV layout " + name + ": a block of " + std::to_string(block_tokens) + " tokens at " +
                      std::to_string(bytes_per_token()) + " B per token exceeds " +
                      std::to_string(kMaxCount) + " B");
  }
  return *bytes;
}

double KvLayout::compression_vs_bf16(const ModelCard& model) const {
  double bf16 = static_cast<double>(bytes_per_token_per_layer(model, Encoding{})) * model.layers;
  return bf16 / static_cast<double>(bytes_per_token());
}

KvLayout build_layout(const ModelCard& model, const PrecisionMap& map, std::string name) {
  int first = map.first_boundary_layers;
  int last = map.last_boundary_layers;
  if (first < 0 || last < 0 || int64_t{first} + last > model.layers) {
    throw ConfigError(name + ": " + std::to_string(first) + " + " + std::to_string(last) +
                      " boundary layers do not fit in " + model.name + "'s " + std::to_string(model.layers) +
                      " layers");
  }
  KvLayout layout{std::move(name), {}};
  auto add = [&](int begin, int count, const Encoding& e) {
    if (count == 0) return;
    layout.groups.push_back({begin, count, e, bytes_per_token_per_layer(model, e)});
  };
  add(0, first, map.boundary);
  add(first, model.layers - first - last, map.body);
  add(model.layers - last, last, map.boundary);
  check_bytes_per_token(layout, model);
  return layout;
}

std::vector<std::string> kv_preset_names() {
  return {"bf16", "fp8", "int4", "int4-g128", "turboquant4", "turboquant4-all"};
}

std::optional<PrecisionMap> kv_preset(const std::string& name) {
  PrecisionMap map;
  if (name == "bf16") {
    map.body = Encoding::of_kind(EncodingKind::kBf16);
  } else if (name == "fp8") {
    map.body = Encoding::of_kind(EncodingKind::kFp8);
  } else if (name == "int4") {
    map.body = Encoding::int4(32);
  } else if (name == "int4-g128") {
    map.body = Encoding::int4(128);
  } else if (name == "turboquant4" || name == "turboquant4-all") {
    map.body = Encoding::of_kind(EncodingKind::kTurboQuant4);
    int boundary = name == "turboquant4" ? 2 : 0;
    map.first_boundary_layers = boundary;
    map.last_boundary_layers = boundary;
  } else {
    return std::nullopt;
  }
  return map;
}

PrecisionMap parse_precision_map(const ConfigNode& node) {
  node.schema_definition("kv_precision_map");
  if (node.is_scalar()) return *kv_preset(node.as_choice(kv_preset_names()));
  node.allow_keys({"encoding", "boundary_layers"});
  PrecisionMap map;
  map.body = parse_encoding(node.child("encoding"));
  if (auto boundary = node.optional_child("boundary_layers")) {
    boundary->allow_keys({"first", "last", "encoding"});
    map.first_boundary_layers = bounded_int(*boundary, "first", 0, 0, kMaxBoundaryLayers, "a layer count");
    map.last_boundary_layers = bounded_int(*boundary, "last", 0, 0, kMaxBoundaryLayers, "a layer count");
    if (boundary->has("encoding")) map.boundary = parse_encoding(boundary->child("encoding"));
  }
  return map;
}

PrecisionMap parse_kv_file(const ConfigNode& root) {
  root.allow_keys({"kv"});
  return parse_precision_map(root.child("kv"));
}

KvLayout resolve_kv_layout(const ModelCard& model, const std::string& spec) {
  if (auto preset = kv_preset(spec)) return build_layout(model, *preset, spec);
  if (std::filesystem::exists(spec)) {
    return build_layout(model, parse_kv_file(ConfigNode::load_file(spec)), spec);
  }
  std::string hint = closest_match(spec, kv_preset_names());
  throw ConfigError("--kv: '" + spec + "' is neither a preset nor a file" +
                    (hint.empty() ? "" : " (did you mean '" + hint + "'?)"));
}

}  // namespace kvtier
