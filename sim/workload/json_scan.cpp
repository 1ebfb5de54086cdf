// The fast path of JsonRecord::parse (json_record.h): a scan of plain flat JSON objects. It accepts a
// subset of JSON and gives up (returns false) on anything outside it, never guessing: escapes in
// strings, nesting, numbers that JSON does not allow or that need more than 64 bits, duplicate keys.
#include <charconv>

#include "sim/workload/json_record.h"

namespace kvtier {
namespace {

class Scanner {
 public:
  explicit Scanner(std::string_view text) : p_(text.data()), end_(text.data() + text.size()) {}

  void skip_space() {
    while (p_ != end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\r' || *p_ == '\n')) ++p_;
  }
  bool at_end() const { return p_ == end_; }
  bool take(char c) {
    if (p_ == end_ || *p_ != c) return false;
    ++p_;
    return true;
  }
  char peek() const { return p_ == end_ ? '\0' : *p_; }

  // An ASCII string without escapes or control characters, after its opening quote (the library
  // checks UTF-8 and escapes).
  bool string(std::string_view& out) {
    const char* start = p_;
    while (p_ != end_ && *p_ != '"') {
      auto c = static_cast<unsigned char>(*p_);
      if (c == '\\' || c < 0x20 || c >= 0x80) return false;
      ++p_;
    }
    if (p_ == end_) return false;
    out = std::string_view(start, static_cast<size_t>(p_ - start));
    ++p_;
    return true;
  }

  // A JSON number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?; `integral` when it has neither part.
  bool number_token(std::string_view& out, bool& integral) {
    const char* start = p_;
    take('-');
    if (take('0')) {
      if (is_digit(peek())) return false;
    } else if (!digits()) {
      return false;
    }
    integral = true;
    if (take('.')) {
      integral = false;
      if (!digits()) return false;
    }
    if (peek() == 'e' || peek() == 'E') {
      ++p_;
      integral = false;
      if (!take('+')) take('-');
      if (!digits()) return false;
    }
    out = std::string_view(start, static_cast<size_t>(p_ - start));
    return true;
  }

  // A block id: a JSON integer of at most 64 bits and no sign, its value taken as its digits are scanned
  // (ids are most of a trace's bytes). False, for the library to judge, on a sign, a fraction, an
  // exponent, a leading zero or an overflow.
  bool id(uint64_t& out) {
    const char* start = p_;
    uint64_t value = 0;
    for (; p_ != end_ && is_digit(*p_); ++p_) {
      if (__builtin_mul_overflow(value, 10u, &value) ||
          __builtin_add_overflow(value, static_cast<uint64_t>(*p_ - '0'), &value))
        return false;
    }
    if (p_ == start || (*start == '0' && p_ - start > 1)) return false;
    if (p_ != end_ && (*p_ == '.' || *p_ == 'e' || *p_ == 'E')) return false;
    out = value;
    return true;
  }

  bool literal(std::string_view word) {
    if (static_cast<size_t>(end_ - p_) < word.size() || std::string_view(p_, word.size()) != word)
      return false;
    p_ += word.size();
    return true;
  }

 private:
  static bool is_digit(char c) { return c >= '0' && c <= '9'; }
  bool digits() {
    const char* start = p_;
    while (p_ != end_ && is_digit(*p_)) ++p_;
    return p_ != start;
  }

  const char* p_;
  const char* end_;
};

bool scan_number(Scanner& in, JsonRecord::Field& field) {
  std::string_view token;
  bool integral = false;
  if (!in.number_token(token, integral)) return false;
  const char* end = token.data() + token.size();
  if (integral && token[0] != '-') {
    uint64_t value = 0;
    if (std::from_chars(token.data(), end, value).ec != std::errc()) return false;
    field.kind = value > static_cast<uint64_t>(INT64_MAX) ? JsonKind::kUnsigned : JsonKind::kInteger;
    field.integer = value > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(value);
    field.number = static_cast<double>(value);
    return true;
  }
  if (integral) {
    int64_t value = 0;
    if (std::from_chars(token.data(), end, value).ec != std::errc()) return false;
    field.kind = JsonKind::kInteger;
    field.integer = value;
    field.number = static_cast<double>(value);
    return true;
  }
  double value = 0;
  auto [stop, ec] = std::from_chars(token.data(), end, value);
  if (ec != std::errc() || stop != end) return false;
  field.kind = JsonKind::kFloat;
  field.number = value;
  return true;
}

bool scan_id_list(Scanner& in, JsonRecord::Field& field) {
  field.kind = JsonKind::kIdList;
  field.ids.clear();
  in.skip_space();
  if (in.take(']')) return true;
  while (true) {
    in.skip_space();
    uint64_t id = 0;
    if (!in.id(id)) return false;
    field.ids.push_back(id);
    in.skip_space();
    if (in.take(']')) return true;
    if (!in.take(',')) return false;
  }
}

bool scan_value(Scanner& in, JsonRecord::Field& field) {
  char c = in.peek();
  if (c == '"') {
    in.take('"');
    std::string_view text;
    if (!in.string(text)) return false;
    field.kind = JsonKind::kString;
    field.text.assign(text);
    return true;
  }
  if (c == '[') return in.take('[') && scan_id_list(in, field);
  if (c == 't' || c == 'f') {
    field.kind = JsonKind::kBoolean;
    field.boolean = c == 't';
    return in.literal(c == 't' ? "true" : "false");
  }
  if (c == 'n') {
    field.kind = JsonKind::kNull;
    return in.literal("null");
  }
  return scan_number(in, field);
}

}  // namespace

bool JsonRecord::scan_plain(std::string_view line) {
  used_ = 0;
  Scanner in(line);
  in.skip_space();
  if (!in.take('{')) return false;
  in.skip_space();
  if (!in.take('}')) {
    while (true) {
      in.skip_space();
      std::string_view name;
      if (!in.take('"') || !in.string(name)) return false;
      for (size_t i = 0; i < used_; ++i) {
        if (fields_[i].name == name) return false;
      }
      in.skip_space();
      if (!in.take(':')) return false;
      in.skip_space();
      if (!scan_value(in, add_field(name))) return false;
      in.skip_space();
      if (in.take('}')) break;
      if (!in.take(',')) return false;
    }
  }
  in.skip_space();
  return in.at_end();
}

}  // namespace kvtier
