// libFuzzer target for the configuration readers: arbitrary bytes as a model card, a hardware file and
// a KV precision map. Any outcome but a value or a ConfigError (a crash, a sanitizer report, another
// exception escaping) is a bug. Build: see docs/testing.md.
#include <cstddef>
#include <cstdint>
#include <string>

#include "hardware.h"
#include "kv_layout.h"
#include "model_card.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  try {
    kvtier::ConfigNode root = kvtier::ConfigNode::load_string(text, "fuzz.yaml");
    try {
      kvtier::ModelCard card = kvtier::parse_model_card(root);
      if (root.has("kv")) kvtier::build_layout(card, kvtier::parse_precision_map(root.child("kv")), "fuzz");
    } catch (const kvtier::ConfigError&) {
    }
    kvtier::parse_hardware(root);
  } catch (const kvtier::ConfigError&) {
  }
  return 0;
}
