#include "sim/workload/json_record.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

namespace kvtier {

// Fills a JsonRecord from SAX events. Errors are kept as a message and end the parse (return false),
// so nothing throws through nlohmann's parser.
class JsonRecordBuilder : public nlohmann::json_sax<nlohmann::json> {
 public:
  explicit JsonRecordBuilder(JsonRecord& record) : record_(record) {}

  bool null() override { return set(JsonKind::kNull); }
  bool boolean(bool value) override {
    if (!set(JsonKind::kBoolean)) return false;
    current().boolean = value;
    return true;
  }
  bool number_integer(number_integer_t value) override {
    if (in_list_) {
      if (value < 0) return fail("expected a list of non-negative integers, found a negative one");
      return append_id(static_cast<uint64_t>(value));
    }
    if (!set(JsonKind::kInteger)) return false;
    current().integer = value;
    current().number = static_cast<double>(value);
    return true;
  }
  bool number_unsigned(number_unsigned_t value) override {
    if (in_list_) return append_id(value);
    if (!set(JsonKind::kUnsigned)) return false;
    current().integer = value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
                            ? std::numeric_limits<int64_t>::max()
                            : static_cast<int64_t>(value);
    current().number = static_cast<double>(value);
    return true;
  }
  bool number_float(number_float_t value, const string_t&) override {
    if (in_list_) return fail("expected a list of non-negative integers");
    if (!set(JsonKind::kFloat)) return false;
    current().number = value;
    return true;
  }
  bool string(string_t& value) override {
    if (!set(JsonKind::kString)) return false;
    current().text = value;
    return true;
  }
  bool binary(binary_t&) override { return fail("unexpected binary value"); }
  bool start_object(std::size_t) override {
    if (depth_++ > 0) return fail("expected a flat object, found a nested object");
    return true;
  }
  bool end_object() override {
    --depth_;
    return true;
  }
  bool start_array(std::size_t) override {
    if (depth_ == 0) return fail("expected a JSON object, found a list");
    if (in_list_) return fail("expected a list of non-negative integers, found a nested list");
    if (!set(JsonKind::kIdList)) return false;
    current().ids.clear();
    in_list_ = true;
    return true;
  }
  bool end_array() override {
    in_list_ = false;
    return true;
  }
  bool key(string_t& name) override {
    for (size_t i = 0; i < record_.used_; ++i) {
      if (record_.fields_[i].name == name) return fail("duplicate field");
    }
    record_.add_field(name);
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) override {
    std::string what = e.what();
    // nlohmann's message starts with "[json.exception.parse_error.101] parse error at ...": keep the tail.
    size_t colon = what.find(": ");
    message_ = "invalid JSON at column " + std::to_string(position) + ": " +
               (colon == std::string::npos ? what : what.substr(colon + 2));
    return false;
  }

  const std::string& message() const { return message_; }

 private:
  JsonRecord::Field& current() { return record_.fields_[record_.used_ - 1]; }

  // A scalar or list arrives for the current key; at the top level it means the line is not an object.
  bool set(JsonKind kind) {
    if (depth_ == 0) return fail("expected a JSON object");
    if (in_list_) return fail("expected a list of non-negative integers");
    current().kind = kind;
    return true;
  }
  bool append_id(uint64_t id) {
    current().ids.push_back(id);
    return true;
  }
  bool fail(std::string what) {
    if (message_.empty()) {
      message_ = record_.used_ > 0 ? "field '" + current().name + "': " + what : what;
    }
    return false;
  }

  JsonRecord& record_;
  int depth_ = 0;
  bool in_list_ = false;
  std::string message_;
};

void JsonRecord::parse(std::string_view line) {
  if (!scan_plain(line)) parse_with_library(line);
}

void JsonRecord::parse_with_library(std::string_view line) {
  used_ = 0;
  JsonRecordBuilder builder(*this);
  bool ok = nlohmann::json::sax_parse(line.begin(), line.end(), &builder);
  if (!ok) throw TraceLineError(builder.message().empty() ? "invalid JSON" : builder.message());
}

JsonRecord::Field& JsonRecord::add_field(std::string_view name) {
  if (used_ == fields_.size()) fields_.emplace_back();
  Field& field = fields_[used_++];
  field.name = name;
  field.kind = JsonKind::kNull;
  return field;
}

std::vector<std::string> JsonRecord::field_names() const {
  std::vector<std::string> names;
  for (size_t i = 0; i < used_; ++i) names.push_back(fields_[i].name);
  return names;
}

const JsonRecord::Field* JsonRecord::find(std::string_view name) const {
  for (size_t i = 0; i < used_; ++i) {
    if (fields_[i].name == name) return fields_[i].kind == JsonKind::kNull ? nullptr : &fields_[i];
  }
  return nullptr;
}

const JsonRecord::Field& JsonRecord::require(std::string_view name) const {
  const Field* field = find(name);
  if (field == nullptr) throw TraceLineError("field '" + std::string(name) + "': missing");
  return *field;
}

namespace {

[[noreturn]] void wrong_type(const JsonRecord::Field& field, const char* expected) {
  throw TraceLineError("field '" + field.name + "': expected " + expected);
}

}  // namespace

int64_t JsonRecord::integer(std::string_view name) const {
  const Field& field = require(name);
  if (field.kind == JsonKind::kInteger) return field.integer;
  if (field.kind == JsonKind::kUnsigned && field.integer < std::numeric_limits<int64_t>::max()) {
    return field.integer;
  }
  // 6758.0 is an integer too; 6758.5 is not.
  if (field.kind == JsonKind::kFloat && std::nearbyint(field.number) == field.number &&
      std::abs(field.number) < 9e15) {
    return static_cast<int64_t>(field.number);
  }
  wrong_type(field, "an integer");
}

std::optional<int64_t> JsonRecord::optional_integer(std::string_view name) const {
  if (!has(name)) return std::nullopt;
  return integer(name);
}

double JsonRecord::number(std::string_view name) const {
  const Field& field = require(name);
  if (field.kind != JsonKind::kInteger && field.kind != JsonKind::kUnsigned &&
      field.kind != JsonKind::kFloat) {
    wrong_type(field, "a number");
  }
  return field.number;
}

std::optional<double> JsonRecord::optional_number(std::string_view name) const {
  if (!has(name)) return std::nullopt;
  return number(name);
}

std::optional<bool> JsonRecord::optional_boolean(std::string_view name) const {
  const Field* field = find(name);
  if (field == nullptr) return std::nullopt;
  if (field->kind != JsonKind::kBoolean) wrong_type(*field, "true or false");
  return field->boolean;
}

std::optional<std::string> JsonRecord::optional_string(std::string_view name) const {
  const Field* field = find(name);
  if (field == nullptr) return std::nullopt;
  if (field->kind != JsonKind::kString) wrong_type(*field, "a string");
  return field->text;
}

const std::vector<uint64_t>& JsonRecord::id_list(std::string_view name) const {
  const Field& field = require(name);
  if (field.kind != JsonKind::kIdList) wrong_type(field, "a list of non-negative integers");
  return field.ids;
}

}  // namespace kvtier
