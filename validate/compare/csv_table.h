// A CSV file of numbers and plain names with a header row, read whole so that columns are found by name
// and every error names its place: `file:line:column: column 'x': what was expected`. The output folders
// kvtier compares (requests.csv, transfers.csv) hold only numbers and names without commas or quotes, so
// quoting is not supported: a quote or a row with the wrong number of cells is an error, not a guess.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvtier::validation {

class CsvTable {
 public:
  // Throws ConfigError when the file cannot be read, is empty, or has a row whose cell count differs
  // from the header's.
  static CsvTable read(const std::filesystem::path& path);
  static CsvTable parse(std::string text, std::string file_name);

  const std::string& file() const { return file_; }
  const std::vector<std::string>& header() const { return header_; }
  size_t rows() const { return row_lines_.size(); }
  size_t line(size_t row) const { return row_lines_[row]; }  // from 1

  // The index of a column; throws ConfigError "file:1: no column 'name' (the header has: ...)".
  size_t column(std::string_view name) const;
  std::optional<size_t> find_column(std::string_view name) const;

  std::string_view text(size_t row, size_t column) const;
  // Throw ConfigError located at the cell when it is not a finite number (an integer for integer()).
  double number(size_t row, size_t column) const;
  int64_t integer(size_t row, size_t column) const;
  // "file:line:column" of a cell (lines and columns from 1, the column in characters).
  std::string where(size_t row, size_t column) const;
  // "file:line" of a row.
  std::string where(size_t row) const;
  [[noreturn]] void fail(size_t row, size_t column, std::string_view what) const;

 private:
  std::string file_;
  std::string text_;
  std::vector<std::string> header_;
  struct Cell {
    size_t begin = 0;  // offset into text_ (offsets, not views: a moved short string moves its bytes)
    size_t size = 0;
    size_t column = 0;  // character column in its line, from 1
  };
  std::vector<size_t> row_lines_;  // line number of each data row
  std::vector<Cell> cells_;        // row-major, header excluded
};

}  // namespace kvtier::validation
