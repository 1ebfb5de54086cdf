// Quantities with units, as they appear in configuration files and on the command line.
//
// Every quantity carries its unit in the text: "141GB", "512GiB", "4.8TB/s", "55GB/s", "2us",
// "989TFLOPS". Decimal prefixes (k, M, G, T, P) are powers of 1000; binary ones (Ki, Mi, Gi, Ti)
// powers of 1024. A bare number where a unit is required, or the wrong kind of unit, is an error:
// a capacity of "141" could be bytes, blocks or tokens, and the tool will not guess.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace kvtier {

enum class UnitKind { kBytes, kBandwidth, kDuration, kFlopRate, kPower };

// Thrown when a quantity does not parse; the message says what was expected.
class UnitError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Returns the value in base units: bytes, bytes/s, seconds, FLOP/s or watts, always finite and non-negative.
// Throws for NaN and infinities ("nanGB", "infTB/s"), a minus sign ("-4GB", "-0B"), a number beyond a
// double's range ("1e400B") and a product that overflows it ("1e300PB"). Converting the result to an
// integer count is the caller's job (checked_math.h).
double parse_quantity(std::string_view text, UnitKind kind);

inline double parse_bytes(std::string_view t) {
  return parse_quantity(t, UnitKind::kBytes);
}
inline double parse_bandwidth(std::string_view t) {
  return parse_quantity(t, UnitKind::kBandwidth);
}
inline double parse_duration(std::string_view t) {
  return parse_quantity(t, UnitKind::kDuration);
}
inline double parse_flop_rate(std::string_view t) {
  return parse_quantity(t, UnitKind::kFlopRate);
}

// What a unit of this kind looks like, for error messages ("a size such as 512GiB or 141GB").
std::string_view unit_example(UnitKind kind);

// A regular expression (ECMAScript, anchored, as JSON Schema's `pattern`) of the text parse_quantity
// accepts for `kind`, built from the same units: a number without a sign, then one of the kind's units.
// Only the range checks ("1e400B") are left to parse_quantity.
std::string quantity_pattern(UnitKind kind);

// Human-readable renderings for tables: "320.0 KiB", "5.90 GB/s", "1.25 s".
std::string format_bytes(double bytes);
std::string format_bandwidth(double bytes_per_s);
std::string format_duration(double seconds);

}  // namespace kvtier
