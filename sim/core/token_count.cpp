#include "sim/core/token_count.h"

#include <optional>
#include <stdexcept>

#include "sim/core/checked_math.h"
#include "sim/core/config.h"

namespace kvtier {

int64_t parse_token_count(const std::string& option, const std::string& text) {
  size_t used = 0;
  long long value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    throw ConfigError(option + ": expected a token count such as 4096 or 32K, got '" + text + "'");
  }
  const std::string suffix = text.substr(used);
  const long long factor = suffix.empty()                   ? 1
                           : suffix == "K" || suffix == "k" ? 1024
                           : suffix == "M"                  ? 1 << 20
                                                            : 0;
  if (factor == 0 || value <= 0) {
    throw ConfigError(option + ": expected a positive token count such as 4096 or 32K, got '" + text + "'");
  }
  const std::optional<int64_t> tokens = checked_mul(value, factor);
  if (!tokens) throw ConfigError(option + ": '" + text + "' is more than " + std::to_string(kMaxCount) + " tokens");
  return *tokens;
}

}  // namespace kvtier
