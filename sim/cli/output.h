// How commands present results: a plain-text table for people, JSON for scripts (--format json).
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

namespace kvtier {

enum class OutputFormat { kTable, kJson };

// Adds --format table|json to a subcommand.
void add_format_option(CLI::App& command, OutputFormat& format);

// A table with right-aligned columns except the first.
class Table {
 public:
  explicit Table(std::vector<std::string> headers) : headers_(std::move(headers)) {}
  void add_row(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  void print(std::ostream& out) const;

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
};

// "327,680"
std::string with_commas(long long value);
// printf-style number formatting: fixed("%.2f", 3.14159) == "3.14"
std::string fixed(const char* format, double value);
// "32K" for 32768, "1M" for 1048576, else the number.
std::string token_count(long long tokens);
// A ratio with three significant digits, so that small ones keep their value: "3.19x", "0.0123x", "120x".
std::string format_ratio(double value);
// How much faster the winner of two costs is: "18.4x" from 1.1x up, "4 %" below, "the same" within 0.5 %.
// `speedup` is the loser's time over the winner's (at least 1).
std::string format_margin(double speedup);

}  // namespace kvtier
