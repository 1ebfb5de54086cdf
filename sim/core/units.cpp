#include "sim/core/units.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <utility>

namespace kvtier {
namespace {

struct Prefix {
  std::string_view text;
  double factor;
};

// Longest first, so that "Ki" wins over "K".
constexpr std::array<Prefix, 11> kPrefixes{{{"Ki", 1024.0},
                                            {"Mi", 1024.0 * 1024},
                                            {"Gi", 1024.0 * 1024 * 1024},
                                            {"Ti", 1024.0 * 1024 * 1024 * 1024},
                                            {"k", 1e3},
                                            {"K", 1e3},
                                            {"M", 1e6},
                                            {"G", 1e9},
                                            {"T", 1e12},
                                            {"P", 1e15},
                                            {"", 1.0}}};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Splits "4.8TB/s" into 4.8 and "TB/s". The number must be finite and carry no minus sign ("-0GB" too:
// a negative size, rate or duration has no meaning).
std::pair<double, std::string_view> split_number(std::string_view text, UnitKind kind) {
  text = trim(text);
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc::result_out_of_range) {
    throw UnitError("the number in '" + std::string(text) + "' is out of range");
  }
  if (ec != std::errc() || !std::isfinite(value)) {
    throw UnitError("expected " + std::string(unit_example(kind)) + ", got '" + std::string(text) + "'");
  }
  if (std::signbit(value))
    throw UnitError("expected a non-negative quantity, got '" + std::string(text) + "'");
  return {value, trim(std::string_view(end, text.data() + text.size() - end))};
}

// Matches `unit` as <prefix><base>; returns the prefix factor or 0 when it does not match.
double prefixed(std::string_view unit, std::string_view base) {
  if (unit.size() < base.size() || unit.substr(unit.size() - base.size()) != base) return 0;
  std::string_view prefix = unit.substr(0, unit.size() - base.size());
  for (const Prefix& p : kPrefixes) {
    if (p.text == prefix) return p.factor;
  }
  return 0;
}

constexpr std::array<std::pair<std::string_view, double>, 6> kDurationUnits{
    {{"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3}, {"s", 1.0}, {"min", 60.0}, {"h", 3600.0}}};

double duration_factor(std::string_view unit) {
  for (auto [name, factor] : kDurationUnits) {
    if (unit == name) return factor;
  }
  return 0;
}

double unit_factor(std::string_view unit, UnitKind kind) {
  switch (kind) {
    case UnitKind::kBytes:
      return prefixed(unit, "B");
    case UnitKind::kBandwidth:
      return unit.ends_with("/s") ? prefixed(unit.substr(0, unit.size() - 2), "B") : 0;
    case UnitKind::kDuration:
      return duration_factor(unit);
    case UnitKind::kFlopRate:
      return prefixed(unit, "FLOPS") != 0 ? prefixed(unit, "FLOPS") : prefixed(unit, "FLOP/s");
    case UnitKind::kPower:
      return prefixed(unit, "W");
  }
  return 0;
}

std::string printf_string(const char* format, double value, const char* unit) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, value, unit);
  return buffer;
}

}  // namespace

double parse_quantity(std::string_view text, UnitKind kind) {
  auto [value, unit] = split_number(text, kind);
  double factor = unit_factor(unit, kind);
  if (factor == 0) {
    std::string why = unit.empty() ? "a unit is required" : "unknown unit '" + std::string(unit) + "'";
    throw UnitError(why + ": expected " + std::string(unit_example(kind)) + ", got '" +
                    std::string(trim(text)) + "'");
  }
  double quantity = value * factor;
  if (!std::isfinite(quantity)) throw UnitError("'" + std::string(trim(text)) + "' is out of range");
  return quantity;
}

std::string_view unit_example(UnitKind kind) {
  switch (kind) {
    case UnitKind::kBytes:
      return "a size such as 512GiB, 141GB or 16KiB";
    case UnitKind::kBandwidth:
      return "a bandwidth such as 55GB/s or 4.8TB/s";
    case UnitKind::kDuration:
      return "a duration such as 2us, 1.5ms or 20min";
    case UnitKind::kFlopRate:
      return "a compute rate such as 989TFLOPS";
    case UnitKind::kPower:
      return "a power such as 700W or 1.5kW";
  }
  return "";
}

std::string quantity_pattern(UnitKind kind) {
  // What std::from_chars reads as a double, less the signs, infinities and NaNs split_number rejects.
  const std::string number = R"((?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)";
  std::string prefix;
  for (const Prefix& p : kPrefixes) {
    if (p.text.empty()) continue;
    if (!prefix.empty()) prefix += '|';
    prefix += p.text;
  }
  prefix = "(?:" + prefix + ")?";
  std::string unit;
  switch (kind) {
    case UnitKind::kBytes:
      unit = prefix + "B";
      break;
    case UnitKind::kBandwidth:
      unit = prefix + "B/s";
      break;
    case UnitKind::kDuration:
      for (const auto& entry : kDurationUnits) {
        if (!unit.empty()) unit += '|';
        unit += entry.first;
      }
      unit = "(?:" + unit + ")";
      break;
    case UnitKind::kFlopRate:
      unit = prefix + "(?:FLOPS|FLOP/s)";
      break;
    case UnitKind::kPower:
      unit = prefix + "W";
      break;
  }
  return "^[ \\t]*" + number + "[ \\t]*" + unit + "[ \\t]*$";
}

std::string format_bytes(double bytes) {
  constexpr std::array<const char*, 5> kNames{"B", "KiB", "MiB", "GiB", "TiB"};
  size_t i = 0;
  while (i + 1 < kNames.size() && bytes >= 1024.0) {
    bytes /= 1024.0;
    ++i;
  }
  return printf_string(i == 0 ? "%.0f %s" : "%.1f %s", bytes, kNames[i]);
}

std::string format_bandwidth(double bytes_per_s) {
  if (bytes_per_s >= 1e12) return printf_string("%.2f %s", bytes_per_s / 1e12, "TB/s");
  if (bytes_per_s >= 1e9) return printf_string("%.2f %s", bytes_per_s / 1e9, "GB/s");
  return printf_string("%.1f %s", bytes_per_s / 1e6, "MB/s");
}

std::string format_duration(double seconds) {
  if (seconds >= 1.0) return printf_string("%.2f %s", seconds, "s");
  if (seconds >= 1e-3) return printf_string("%.2f %s", seconds * 1e3, "ms");
  return printf_string("%.1f %s", seconds * 1e6, "us");
}

}  // namespace kvtier
