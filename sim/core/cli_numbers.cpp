#include "sim/core/cli_numbers.h"

#include <cmath>
#include <cstdint>
#include <iostream>

#include "sim/core/config.h"

namespace kvtier {
namespace {

enum class NumberKind { kInteger, kUnsigned, kReal, kNotANumber };
enum class LowerBound { kNone, kZero, kAboveZero };

// The type CLI11 converts the option's text to: "INT", "UINT", "FLOAT" (before any ":VALIDATOR").
NumberKind number_kind(const CLI::Option& option) {
  if (option.get_type_size() == 0) return NumberKind::kNotANumber;  // a flag
  std::string type = option.get_type_name();
  type = type.substr(0, type.find(':'));
  if (type == "INT") return NumberKind::kInteger;
  if (type == "UINT") return NumberKind::kUnsigned;
  if (type == "FLOAT") return NumberKind::kReal;
  return NumberKind::kNotANumber;
}

// What the option expects, for messages: "a positive integer", "a finite non-negative number", ...
std::string expectation(NumberKind kind, LowerBound bound) {
  if (kind == NumberKind::kUnsigned && bound == LowerBound::kNone)
    bound = LowerBound::kZero;  // no sign taken
  std::string sign = bound == LowerBound::kAboveZero ? "positive "
                     : bound == LowerBound::kZero    ? "non-negative "
                                                     : "";
  if (kind == NumberKind::kReal) return "a finite " + sign + "number";
  return (sign.empty() ? "an " : "a ") + sign + "integer";
}

// The value of `text` as CLI11 will convert it (so the syntax accepted stays CLI11's), as a double for the
// bound; nullopt when it is no number of this kind.
std::optional<double> read_number(const std::string& text, NumberKind kind) {
  if (kind == NumberKind::kInteger) {
    int64_t value = 0;
    if (CLI::detail::lexical_cast(text, value)) return static_cast<double>(value);
  } else if (kind == NumberKind::kUnsigned) {
    uint64_t value = 0;
    if (text.find('-') == std::string::npos && CLI::detail::lexical_cast(text, value)) {
      return static_cast<double>(value);
    }
  } else {
    double value = 0;
    if (CLI::detail::lexical_cast(text, value) && std::isfinite(value)) return value;
  }
  return std::nullopt;
}

// A validator's function: "" when `text` is a number of this kind within the bound, else the complaint.
std::function<std::string(std::string&)> number_check(NumberKind kind, LowerBound bound) {
  return [kind, bound](std::string& text) -> std::string {
    std::optional<double> value = read_number(text, kind);
    bool in_range = value && (bound == LowerBound::kNone || (bound == LowerBound::kZero && *value >= 0) ||
                              (bound == LowerBound::kAboveZero && *value > 0));
    return in_range ? std::string() : "expected " + expectation(kind, bound) + ", got " + text;
  };
}

// CLI11's PositiveNumber or NonNegativeNumber on this option, if it has one. Their description, which
// --help shows, says which: "POSITIVE" or "NONNEGATIVE".
CLI::Validator* declared_bound(CLI::Option& option, LowerBound& bound) {
  bound = LowerBound::kNone;
  for (int index = 0;; ++index) {
    CLI::Validator* validator = nullptr;
    try {
      validator = option.get_validator(index);
    } catch (const CLI::OptionNotFound&) {
      return nullptr;  // past the last one
    }
    std::string description = validator->get_description();
    if (description == "POSITIVE") bound = LowerBound::kAboveZero;
    if (description == "NONNEGATIVE") bound = LowerBound::kZero;
    if (bound != LowerBound::kNone) return validator;
  }
}

// The subcommand the parse reached: "kv" in `kvtier kv --modle x`.
const CLI::App& deepest_command(const CLI::App& app) {
  const CLI::App* command = &app;
  while (!command->get_subcommands().empty()) command = command->get_subcommands().front();
  return *command;
}

// "kvtier trace stats"; the root is named `tool` (CLI11 names it after argv[0], a path).
std::string command_path(const CLI::App& command, const std::string& tool) {
  const CLI::App* parent = command.get_parent();
  return parent == nullptr ? tool : command_path(*parent, tool) + " " + command.get_name();
}

bool looks_like_option(const std::string& arg) {
  return arg.size() > 1 && arg[0] == '-' && !std::isdigit(static_cast<unsigned char>(arg[1])) &&
         arg[1] != '.';
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  std::string hint = closest_match(word, candidates);
  return hint.empty() ? "" : " (did you mean " + hint + "?)";
}

// "unknown option --modle (did you mean --model?)" when an argument the parse left over is an option.
std::optional<std::string> unknown_option(const CLI::App& app, const CLI::App& command) {
  for (const std::string& arg : app.remaining(true)) {
    if (!looks_like_option(arg)) continue;
    std::string name = arg.substr(0, arg.find('='));
    std::vector<std::string> known;
    for (const CLI::Option* option : command.get_options()) {
      for (const std::string& long_name : option->get_lnames()) known.push_back("--" + long_name);
      for (const std::string& short_name : option->get_snames()) known.push_back("-" + short_name);
    }
    return "unknown option " + name + did_you_mean(name, known);
  }
  return std::nullopt;
}

// "unknown command 'simulat' (did you mean simulate?)" when the first leftover word stands where a
// subcommand was expected.
std::optional<std::string> unknown_command(const CLI::App& app, const CLI::App& command) {
  std::vector<std::string> names;
  for (const CLI::App* sub : command.get_subcommands([](const CLI::App*) { return true; })) {
    names.push_back(sub->get_name());
  }
  std::vector<std::string> left = app.remaining(true);
  if (names.empty() || left.empty() || looks_like_option(left.front())) return std::nullopt;
  return "unknown command '" + left.front() + "'" + did_you_mean(left.front(), names);
}

// "--jobs: 99999999999 is out of range" for a number that passed the checks above but does not fit the
// option's variable (an int, say). CLI11 words it "Could not convert: --jobs = 99999999999".
std::optional<std::string> out_of_range(const CLI::App& command, const CLI::ParseError& error) {
  const std::string prefix = "Could not convert: ";
  std::string text = error.what();
  size_t equals = text.find(" = ");
  if (error.get_name() != "ConversionError" || !text.starts_with(prefix) || equals == std::string::npos) {
    return std::nullopt;
  }
  std::string name = text.substr(prefix.size(), equals - prefix.size());
  const CLI::Option* option = command.get_option_no_throw(name);
  if (option == nullptr || number_kind(*option) == NumberKind::kNotANumber) return std::nullopt;
  return name + ": " + text.substr(equals + 3) + " is out of range";
}

}  // namespace

void check_numeric_options(CLI::App& app) {
  for (CLI::Option* option : app.get_options()) {
    NumberKind kind = number_kind(*option);
    if (kind == NumberKind::kNotANumber) continue;
    LowerBound bound = LowerBound::kNone;
    if (CLI::Validator* declared = declared_bound(*option, bound)) {
      // The declared range keeps its place and its name in --help; only what it checks and says changes.
      declared->operation(number_check(kind, bound));
    } else {
      option->check(CLI::Validator(number_check(kind, bound), ""));
    }
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) check_numeric_options(*sub);
}

std::string usage_error_message(const CLI::App& app, const CLI::ParseError& error) {
  const CLI::App& command = deepest_command(app);
  if (auto message = unknown_option(app, command)) return *message;
  if (auto message = unknown_command(app, command)) return *message;
  if (auto message = out_of_range(command, error)) return *message;
  return error.what();
}

int report_usage_error(const CLI::App& app, const CLI::ParseError& error, const std::string& tool) {
  if (error.get_exit_code() == 0) return app.exit(error);
  std::cerr << tool << ": " << usage_error_message(app, error) << "\nRun '"
            << command_path(deepest_command(app), tool) << " --help' for its options.\n";
  return 2;
}

}  // namespace kvtier
