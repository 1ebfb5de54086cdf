// libFuzzer target for the Hugging Face config.json reader: arbitrary bytes as a config.json. Any outcome
// but a card or a ConfigError (a crash, a sanitizer report, another exception escaping) is a bug, and so
// is a card that the model-card reader would not read back unchanged: load_config hands every .json card
// to parse_model_card through model_card_yaml, so a card the mapping accepts must pass the card's own
// checks. Seeds in sim/core/hf_fuzz_corpus/. Build: see docs/testing.md.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "sim/core/hf_config.h"
#include "sim/core/kv_layout.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  kvtier::ModelCard card;
  try {
    card = kvtier::parse_hf_config(text, "fuzz.json");
  } catch (const kvtier::ConfigError&) {
    return 0;
  }
  const kvtier::ModelCard back =
      kvtier::parse_model_card(kvtier::ConfigNode::load_string(kvtier::model_card_yaml(card), "fuzz.yaml"));
  if (!(back == card)) std::abort();
  for (const std::string& preset : kvtier::kv_preset_names()) {
    try {
      kvtier::resolve_kv_layout(card, preset).bytes_per_block(512);
    } catch (const kvtier::ConfigError&) {
    }
  }
  return 0;
}
