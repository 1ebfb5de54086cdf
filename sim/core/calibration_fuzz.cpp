// libFuzzer target for the calibration reader: arbitrary bytes as a `kvtier-hw calibrate` file. Any
// outcome but a Calibration or a ConfigError (a crash, a sanitizer report, another exception escaping) is
// a bug, and so are two more: a calibration the reader accepts must be written back as a file it accepts
// again with the same contents (the writer rounds hardware values once: writing what it read back gives
// the same JSON), and a file's attention costs must price a step (the simulator prices every step with
// them). Seeds in sim/core/calibration_fuzz_corpus/. Build: see docs/testing.md.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "sim/core/attention_cost.h"
#include "sim/core/calibration.h"

namespace {

// Decodes of 1K and 32K tokens beside a 4K chunk after 8K cached: both kernels' paths.
void price_steps(const kvtier::AttentionCosts& costs) {
  const std::array<kvtier::AttentionSequence, 3> mixed = {{{1024, 1}, {32768, 1}, {8192, 4096}}};
  const std::array<kvtier::AttentionSequence, 1> decode = {{{2048, 1}}};
  kvtier::attention_launch_seconds(costs, 8, 4, mixed);
  kvtier::attention_launch_seconds(costs, 8, 4, decode);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  kvtier::Calibration calibration;
  try {
    calibration = kvtier::parse_calibration(text, "fuzz.json");
  } catch (const kvtier::ConfigError&) {
    return 0;
  }
  const nlohmann::json written = calibration;
  const nlohmann::json rewritten = kvtier::parse_calibration(written.dump(), "written.json");
  if (rewritten != written) std::abort();
  if (calibration.serving && calibration.serving->costs.attention)
    price_steps(*calibration.serving->costs.attention);
  return 0;
}
