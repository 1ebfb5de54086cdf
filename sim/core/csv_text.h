// Numbers appended to a CSV row being built, through std::to_chars: the run writers (requests.csv,
// timeseries.csv, transfers.csv) build each row in a string and write it at once, since a stream's
// per-field formatting (locale, flags, padding) took a fifth of a long simulation.
#pragma once

#include <bit>
#include <charconv>
#include <concepts>
#include <cstdint>
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

// append_shortest's text, formatted again only when the value changes (bit for bit: -0 and 0 differ):
// the rows of a batch of transfers share their start and end, and most stores their size.
class ShortestText {
 public:
  void append(std::string& row, double value) {
    const auto bits = std::bit_cast<uint64_t>(value);
    if (length_ == 0 || bits != bits_) {
      bits_ = bits;
      length_ = static_cast<size_t>(std::to_chars(text_, text_ + sizeof text_, value).ptr - text_);
    }
    row.append(text_, length_);
  }

 private:
  uint64_t bits_ = 0;
  size_t length_ = 0;  // 0 until the first value
  char text_[64];
};

inline void append_integer(std::string& row, std::integral auto value) {
  char buffer[24];
  row.append(buffer, std::to_chars(buffer, buffer + sizeof buffer, value).ptr);
}

}  // namespace kvtier
