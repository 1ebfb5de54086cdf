// libFuzzer target for the whole check that `kvtier simulate` makes before it runs anything: the input is a
// scenario file, then optionally a line `--set` and one override (key.path=value) per line after it. It
// goes through plan_runs (variants, overrides, the scenario, its workload, the check that every override
// is read). Any outcome but runs or a ConfigError/UnitError (a crash, a sanitizer report, a hang, another
// exception escaping) is a bug. Build and run: see docs/testing.md.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "sim/engine/scenario.h"

namespace {

struct FuzzInput {
  std::string yaml;
  std::vector<std::string> set_arguments;
};

FuzzInput split_input(const std::string& text) {
  FuzzInput input;
  std::istringstream lines(text);
  bool in_yaml = true;
  for (std::string line; std::getline(lines, line);) {
    if (in_yaml && line == "--set") {
      in_yaml = false;
    } else if (in_yaml) {
      input.yaml += line + "\n";
    } else {
      input.set_arguments.push_back(line);
    }
  }
  return input;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzInput input = split_input(std::string(reinterpret_cast<const char*>(data), size));
  try {
    std::vector<kvtier::Override> overrides;
    for (const std::string& argument : input.set_arguments) overrides.push_back(kvtier::parse_set_argument(argument));
    kvtier::plan_runs(kvtier::ConfigNode::load_string(input.yaml, "fuzz.yaml"), overrides);
  } catch (const kvtier::ConfigError&) {
  } catch (const kvtier::UnitError&) {
  }
  return 0;
}
