#include "sim/core/json_text.h"

#include <algorithm>

#include "sim/core/config.h"

namespace kvtier {
namespace {

// nlohmann's reason without its "[json.exception.parse_error.101] parse error at line L, column C: ".
std::string parse_error_reason(const nlohmann::json::parse_error& e) {
  const std::string message = e.what();
  const size_t column = message.find("column ");
  const size_t reason = column == std::string::npos ? std::string::npos : message.find(": ", column);
  return reason == std::string::npos ? message : message.substr(reason + 2);
}

}  // namespace

std::string line_column(const std::string& text, size_t offset) {
  offset = std::min(offset, text.size());
  const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(offset), '\n');
  const size_t newline = offset == 0 ? std::string::npos : text.rfind('\n', offset - 1);
  const size_t column = newline == std::string::npos ? offset + 1 : offset - newline;
  return std::to_string(line) + ":" + std::to_string(column);
}

nlohmann::json parse_json_text(const std::string& text, const std::string& name,
                               const nlohmann::json::parser_callback_t& callback) {
  try {
    return nlohmann::json::parse(text, callback);
  } catch (const nlohmann::json::parse_error& e) {  // e.byte counts from 1: the last character read
    throw ConfigError(name + ":" + line_column(text, e.byte == 0 ? 0 : e.byte - 1) +
                      ": invalid JSON: " + parse_error_reason(e));
  } catch (const nlohmann::json::out_of_range& e) {
    // "[json.exception.out_of_range.406] number overflow parsing '1e999'": located by the number's text.
    const std::string message = e.what();
    const size_t quote = message.find('\'');
    const size_t at = quote == std::string::npos
                          ? std::string::npos
                          : text.find(message.substr(quote + 1, message.rfind('\'') - quote - 1));
    throw ConfigError(name + (at == std::string::npos ? "" : ":" + line_column(text, at)) +
                      ": invalid JSON: " + message.substr(message.find("] ") + 2));
  }
}

}  // namespace kvtier
