// KV layouts: how many bytes a cached token costs, layer group by layer group.
//
// An Encoding says how one layer's K/V (or MLA latent) is stored: bf16, fp8, group-scaled int4, or
// the TurboQuant 4-bit slot that vLLM uses (one uint8 slot per token per KV head). A PrecisionMap
// assigns encodings to layers (a body encoding, with optional bf16 boundary layers at either end).
// A KvLayout is the result: a list of contiguous layer groups, each with its bytes per token. It is
// the "layout-aware" view: a mixed bf16 + packed-uint8 stack moves through the tiers group by group.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/core/config.h"
#include "sim/core/model_card.h"

namespace kvtier {

// Tokens per cache block where neither a scenario nor a command sets it: LMCache's default chunk size.
inline constexpr int64_t kDefaultBlockTokens = 256;

enum class EncodingKind { kBf16, kFp8, kInt4Group, kTurboQuant4 };

struct Encoding {
  EncodingKind kind = EncodingKind::kBf16;
  int group_size = 32;  // int4: elements sharing one scale (and zero point)
  int scale_bytes = 2;  // int4: bytes of the scale and of the zero point (fp16 = 2, fp32 = 4)
  bool zero_point = true;
  // TurboQuant: the packed slot is padded to this many bytes. 134 raw bytes at head_dim 128 pad to 136,
  // which is the slot size behind the published 3.76× (512 / 136) and 3.19× figures.
  int slot_align = 8;

  std::string name() const;  // "bf16", "fp8", "int4-g32", "turboquant4"
  bool operator==(const Encoding&) const = default;

  // An encoding of `kind` with the default fields; group-scaled int4 with `group_size` elements a group.
  static Encoding of_kind(EncodingKind kind) {
    Encoding e;
    e.kind = kind;
    return e;
  }
  static Encoding int4(int group_size) {
    Encoding e = of_kind(EncodingKind::kInt4Group);
    e.group_size = group_size;
    return e;
  }
};

// Bytes one token occupies in one layer under `encoding`. Throws ConfigError where the encoding
// does not apply (TurboQuant slots are defined per KV head, so not for MLA) or the bytes overflow int64_t.
int64_t bytes_per_token_per_layer(const ModelCard& model, const Encoding& encoding);

// The TurboQuant slot: [K indices (4 bit × d) | K norm fp16 | V (4 bit × d) | V scale fp16 | V zero fp16].
int64_t turboquant_slot_bytes(int head_dim, int slot_align);

struct PrecisionMap {
  Encoding body;
  Encoding boundary;  // bf16 unless set
  int first_boundary_layers = 0;
  int last_boundary_layers = 0;
};

struct LayerGroup {
  int first_layer = 0;
  int layer_count = 0;
  Encoding encoding;
  int64_t bytes_per_token_per_layer = 0;
  int64_t bytes_per_token() const { return bytes_per_token_per_layer * layer_count; }
  bool operator==(const LayerGroup&) const = default;
};

struct KvLayout {
  std::string name;
  std::vector<LayerGroup> groups;

  int64_t bytes_per_token() const;
  // Throws ConfigError when the product leaves int64_t (a block of more than 2^33 tokens can).
  int64_t bytes_per_block(int64_t block_tokens) const;
  // bf16 bytes per token of the same model divided by this layout's.
  double compression_vs_bf16(const ModelCard& model) const;
  // Layouts are equal when they store every layer alike: the same groups with the same encodings. The
  // name is a label ("int4", "dram.kv") and takes no part.
  bool operator==(const KvLayout& other) const { return groups == other.groups; }
};

// Throws ConfigError when the boundary layers do not fit or the layout takes more than kMaxKvBytesPerToken.
KvLayout build_layout(const ModelCard& model, const PrecisionMap& map, std::string name);

// Presets: bf16, fp8, int4 (group 32, fp16 scale + zero), int4-g128, turboquant4 (first 2 and last 2
// layers bf16, TurboQuant in between, the AMD seed's stack) and turboquant4-all.
std::vector<std::string> kv_preset_names();
std::optional<PrecisionMap> kv_preset(const std::string& name);

// A precision map from configuration: a preset name, or a mapping
// {encoding: <name or {kind, group_size, scale_dtype, zero_point}>, boundary_layers: {first, last,
// encoding}}.
PrecisionMap parse_precision_map(const ConfigNode& node);
// A precision-map file (`--kv FILE`): the map under its one key, `kv`.
PrecisionMap parse_kv_file(const ConfigNode& root);

// `spec` is a preset name or a YAML file holding a precision map.
KvLayout resolve_kv_layout(const ModelCard& model, const std::string& spec);

}  // namespace kvtier
