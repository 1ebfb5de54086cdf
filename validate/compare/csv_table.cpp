#include "validate/compare/csv_table.h"

#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>

#include "sim/core/config.h"

namespace kvtier::validation {
namespace {

std::string read_whole(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path.string() + ": cannot read the file");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

CsvTable CsvTable::read(const std::filesystem::path& path) {
  return parse(read_whole(path), path.string());
}

CsvTable CsvTable::parse(std::string text, std::string file_name) {
  CsvTable table;
  table.file_ = std::move(file_name);
  table.text_ = std::move(text);
  const std::string& t = table.text_;
  size_t line = 0, pos = 0, header_cells = 0;
  const size_t quote = t.find('"');  // any quote is an error, so the first one is the only one to find
  while (pos < t.size()) {
    size_t end = t.find('\n', pos);
    if (end == std::string::npos) end = t.size();
    size_t stop = end > pos && t[end - 1] == '\r' ? end - 1 : end;
    ++line;
    if (stop == pos) {
      pos = end + 1;
      continue;  // blank lines (a trailing newline) carry no row
    }
    if (quote < stop) {
      throw ConfigError(table.file_ + ":" + std::to_string(line) + ":" + std::to_string(quote - pos + 1) +
                        ": quoted cells are not supported");
    }
    std::vector<Cell> row;
    for (size_t cell = pos;;) {
      size_t comma = t.find(',', cell);
      size_t cell_end = comma == std::string::npos || comma > stop ? stop : comma;
      row.push_back({cell, cell_end - cell, cell - pos + 1});
      if (cell_end == stop) break;
      cell = cell_end + 1;
    }
    if (header_cells == 0) {
      header_cells = row.size();
      for (const Cell& c : row) table.header_.push_back(t.substr(c.begin, c.size));
    } else if (row.size() != header_cells) {
      throw ConfigError(table.file_ + ":" + std::to_string(line) + ": expected " +
                        std::to_string(header_cells) + " cells as in the header, got " +
                        std::to_string(row.size()));
    } else {
      table.row_lines_.push_back(line);
      table.cells_.insert(table.cells_.end(), row.begin(), row.end());
    }
    pos = end + 1;
  }
  if (header_cells == 0) throw ConfigError(table.file_ + ": the file is empty; expected a header row");
  return table;
}

std::optional<size_t> CsvTable::find_column(std::string_view name) const {
  for (size_t c = 0; c < header_.size(); ++c) {
    if (header_[c] == name) return c;
  }
  return std::nullopt;
}

size_t CsvTable::column(std::string_view name) const {
  if (auto c = find_column(name)) return *c;
  throw ConfigError(file_ + ":1: no column '" + std::string(name) + "' (the header has: " + joined(header_) +
                    ")");
}

std::string_view CsvTable::text(size_t row, size_t column) const {
  const Cell& c = cells_[row * header_.size() + column];
  return std::string_view(text_).substr(c.begin, c.size);
}

std::string CsvTable::where(size_t row) const {
  return file_ + ":" + std::to_string(row_lines_[row]);
}

std::string CsvTable::where(size_t row, size_t column) const {
  return where(row) + ":" + std::to_string(cells_[row * header_.size() + column].column);
}

void CsvTable::fail(size_t row, size_t column, std::string_view what) const {
  throw ConfigError(where(row, column) + ": column '" + header_[column] + "': " + std::string(what));
}

double CsvTable::number(size_t row, size_t column) const {
  std::string_view cell = text(row, column);
  double value = 0;
  auto [end, ec] = std::from_chars(cell.data(), cell.data() + cell.size(), value);
  if (ec != std::errc() || end != cell.data() + cell.size() || cell.empty() || !std::isfinite(value)) {
    fail(row, column, "expected a number, got '" + std::string(cell) + "'");
  }
  return value;
}

int64_t CsvTable::integer(size_t row, size_t column) const {
  std::string_view cell = text(row, column);
  int64_t value = 0;
  auto [end, ec] = std::from_chars(cell.data(), cell.data() + cell.size(), value);
  if (ec != std::errc() || end != cell.data() + cell.size() || cell.empty()) {
    fail(row, column, "expected an integer, got '" + std::string(cell) + "'");
  }
  return value;
}

}  // namespace kvtier::validation
