// Numbers appended to a CSV row being built, through std::to_chars: the run writers (requests.csv,
// timeseries.csv, transfers.csv) build each row in a string and write it at once, since a stream's
// per-field formatting (locale, flags, padding) took a fifth of a long simulation.
#pragma once

#include <charconv>
#include <concepts>
#include <string>

namespace kvtier {

// As printf("%.*g") and a stream with setprecision(precision) write it.
inline void append_general(std::string& row, double value, int precision) {
  char buffer[64];
  char* end = std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::general, precision).ptr;
  row.append(buffer, end);
}

// The shortest text that reads back as the same double.
inline void append_shortest(std::string& row, double value) {
  char buffer[64];
  row.append(buffer, std::to_chars(buffer, buffer + sizeof buffer, value).ptr);
}

inline void append_integer(std::string& row, std::integral auto value) {
  char buffer[24];
  row.append(buffer, std::to_chars(buffer, buffer + sizeof buffer, value).ptr);
}

}  // namespace kvtier
