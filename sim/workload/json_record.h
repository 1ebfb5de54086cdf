// One line of a JSON-lines trace, parsed into a flat record with located errors.
//
// Trace lines are flat objects of numbers, strings, booleans and lists of integers. JsonRecord parses
// one into reused buffers and answers typed questions about its fields. Lines in the plain shape every
// trace writer produces (no escapes, no nesting) take a direct scan that uses std::from_chars for the
// numbers: nlohmann::json's lexer took over half of `trace stats` on the benchmark. Anything else, and
// every line the scan does not accept, goes to nlohmann::json's SAX parser, which decides what the line
// means and words the error; a fuzz target checks that both paths agree on every input. Failures are
// TraceLineError naming the field and what was expected; the reader adds the file and line number.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace kvtier {

class TraceLineError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class JsonRecord {
 public:
  // Parses `line`, replacing the previous contents. Throws TraceLineError for invalid JSON, a value
  // that is not an object, nested objects, or lists of anything but integers.
  void parse(std::string_view line);
  // Only nlohmann::json's parser: the reference the fast scan is checked against.
  void parse_with_library(std::string_view line);

  bool has(std::string_view name) const { return find(name) != nullptr; }
  std::vector<std::string> field_names() const;

  // Typed access; the optional forms return nullopt when the field is absent (or null).
  int64_t integer(std::string_view name) const;
  std::optional<int64_t> optional_integer(std::string_view name) const;
  double number(std::string_view name) const;
  std::optional<double> optional_number(std::string_view name) const;
  std::optional<bool> optional_boolean(std::string_view name) const;
  std::optional<std::string> optional_string(std::string_view name) const;
  // A list of non-negative integers (block ids).
  const std::vector<uint64_t>& id_list(std::string_view name) const;

  struct Field;  // public for the SAX handler in the .cpp

 private:
  bool scan_plain(std::string_view line);  // false: not plain, left for the library
  Field& add_field(std::string_view name);
  const Field* find(std::string_view name) const;
  const Field& require(std::string_view name) const;

  std::vector<Field> fields_;
  size_t used_ = 0;
  friend class JsonRecordBuilder;
};

enum class JsonKind { kNull, kBoolean, kInteger, kUnsigned, kFloat, kString, kIdList };

struct JsonRecord::Field {
  std::string name;
  JsonKind kind = JsonKind::kNull;
  bool boolean = false;
  int64_t integer = 0;
  double number = 0;
  std::string text;
  std::vector<uint64_t> ids;
};

}  // namespace kvtier
