// Test helper: the message of the ConfigError a call throws, so that tests compare whole located messages
// ("file:line:column: key.path: what was expected").
#pragma once

#include <functional>
#include <string>

#include "sim/core/config.h"

namespace kvtier::testing {

// The ConfigError's message, or "(no error)" when `f` throws none.
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace kvtier::testing
