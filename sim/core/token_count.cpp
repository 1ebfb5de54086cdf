#include "sim/core/token_count.h"

#include <cctype>
#include <stdexcept>

#include "sim/core/checked_math.h"
#include "sim/core/config.h"

namespace kvtier {

bool has_count_suffix(const std::string& text) {
  return !text.empty() && !std::isdigit(static_cast<unsigned char>(text.back()));
}

std::optional<int64_t> read_token_count(const std::string& text, std::string& error) {
  size_t used = 0;
  long long value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    error = "expected a token count such as 4096 or 32K, got '" + text + "'";
    return std::nullopt;
  }
  const std::string suffix = text.substr(used);
  const long long factor = suffix.empty()                   ? 1
                           : suffix == "K" || suffix == "k" ? 1024
                           : suffix == "M"                  ? 1 << 20
                                                            : 0;
  if (factor == 0 || value <= 0) {
    error = "expected a positive token count such as 4096 or 32K, got '" + text + "'";
    return std::nullopt;
  }
  const std::optional<int64_t> tokens = checked_mul(value, factor);
  if (!tokens) error = "'" + text + "' is more than " + std::to_string(kMaxCount) + " tokens";
  return tokens;
}

int64_t parse_token_count(const std::string& option, const std::string& text) {
  std::string error;
  std::optional<int64_t> tokens = read_token_count(text, error);
  if (!tokens) throw ConfigError(option + ": " + error);
  return *tokens;
}

}  // namespace kvtier
