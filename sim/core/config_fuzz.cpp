// libFuzzer target for the configuration readers: arbitrary bytes as a hardware file, as a cost file, and
// as a model card (the document itself, or its `model` key) with an optional KV precision map (`kv`) and
// block size (`block_tokens`) beside it. Any outcome but a value or a ConfigError (a crash, a sanitizer
// report, another exception escaping) is a bug. Every layout the card admits, each preset and the `kv` map,
// is sized per token and per block, so that an arithmetic overflow trips UBSan instead of passing as a wrong
// size. Build: see docs/testing.md.
#include <cstddef>
#include <cstdint>
#include <string>

#include "sim/core/cost_file.h"
#include "sim/core/hardware.h"
#include "sim/core/kv_layout.h"
#include "sim/core/model_card.h"

namespace {

void size_layout(const kvtier::ModelCard& card, const kvtier::KvLayout& layout, int64_t block_tokens) {
  layout.bytes_per_token();
  layout.compression_vs_bf16(card);
  layout.bytes_per_block(block_tokens);
}

void size_every_layout(const kvtier::ConfigNode& root) {
  kvtier::ModelCard card = kvtier::parse_model_card(root.has("model") ? root.child("model") : root);
  int64_t block_tokens = root.integer("block_tokens", 512);
  for (const std::string& preset : kvtier::kv_preset_names()) {
    try {
      size_layout(card, kvtier::resolve_kv_layout(card, preset), block_tokens);
    } catch (const kvtier::ConfigError&) {
    }
  }
  if (root.has("kv")) {
    size_layout(card, kvtier::build_layout(card, kvtier::parse_precision_map(root.child("kv")), "fuzz"),
                block_tokens);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  try {
    kvtier::ConfigNode root = kvtier::ConfigNode::load_string(text, "fuzz.yaml");
    try {
      size_every_layout(root);
    } catch (const kvtier::ConfigError&) {
    }
    try {
      kvtier::parse_cost_file(root);
    } catch (const kvtier::ConfigError&) {
    }
    kvtier::parse_hardware(root);
  } catch (const kvtier::ConfigError&) {
  }
  return 0;
}
