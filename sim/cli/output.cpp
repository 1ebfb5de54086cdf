#include "sim/cli/output.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <map>

#include "sim/core/cli_help.h"

namespace kvtier {

void add_format_option(CLI::App& command, OutputFormat& format) {
  std::map<std::string, OutputFormat> names{{"table", OutputFormat::kTable}, {"json", OutputFormat::kJson}};
  command.add_option("--format", format, "Output format: table (default) or json")
      ->transform(CLI::CheckedTransformer(names, CLI::ignore_case))
      ->type_name(choices_label({"table", "json"}));
}

void Table::print(std::ostream& out) const {
  std::vector<size_t> widths(headers_.size());
  for (size_t c = 0; c < headers_.size(); ++c) widths[c] = headers_[c].size();
  for (const auto& row : rows_) {
    for (size_t c = 0; c < row.size() && c < widths.size(); ++c)
      widths[c] = std::max(widths[c], row[c].size());
  }
  auto print_row = [&](const std::vector<std::string>& cells) {
    for (size_t c = 0; c < widths.size(); ++c) {
      const std::string& cell = c < cells.size() ? cells[c] : "";
      out << (c == 0 ? std::left : std::right) << std::setw(static_cast<int>(widths[c])) << cell
          << (c + 1 < widths.size() ? "  " : "\n");
    }
  };
  print_row(headers_);
  std::vector<std::string> rule;
  for (size_t w : widths) rule.emplace_back(w, '-');
  print_row(rule);
  for (const auto& row : rows_) print_row(row);
}

std::string with_commas(long long value) {
  // The magnitude as unsigned: -LLONG_MIN does not exist as a long long.
  unsigned long long magnitude = value < 0 ? 0ULL - static_cast<unsigned long long>(value) : value;
  std::string digits = std::to_string(magnitude);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return value < 0 ? "-" + out : out;
}

std::string fixed(const char* format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

std::string format_ratio(double value) {
  if (value >= 99.95) return fixed("%.0fx", value);  // %#.3g would print 100.x
  return fixed("%#.3gx", value);
}

std::string format_margin(double speedup) {
  if (speedup >= 1.095) return fixed("%.1fx", speedup);
  if (std::lround(100 * (speedup - 1)) >= 1) return fixed("%.0f %%", 100 * (speedup - 1));
  return "the same";
}

std::string token_count(long long tokens) {
  if (tokens >= 1 << 20 && tokens % (1 << 20) == 0) return std::to_string(tokens >> 20) + "M";
  if (tokens >= 1024 && tokens % 1024 == 0) return std::to_string(tokens >> 10) + "K";
  return std::to_string(tokens);
}

}  // namespace kvtier
