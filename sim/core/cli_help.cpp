#include "sim/core/cli_help.h"

#include "sim/core/token_count.h"

namespace kvtier {
namespace {

// The option's type as CLI11 names it, before the ":VALIDATOR" descriptions it appends.
std::string base_type_name(const CLI::Option& option) {
  std::string type = option.get_type_name();
  return type.substr(0, type.find(':'));
}

std::string plain_type_label(const CLI::Option& option) {
  std::string type = base_type_name(option);
  if (type == "INT" || type == "UINT") return "N";
  if (type == "FLOAT") return "NUM";
  return type;  // TEXT, or a label the command gave (type_name("table|json"))
}

// What CLI11 prints after the option's names, rebuilt from the plain label.
std::string option_text(const CLI::Option& option) {
  std::string text = plain_type_label(option);
  if (!option.get_default_str().empty()) text += "=" + option.get_default_str();
  if (option.get_expected_max() > 1) text += " ...";
  if (option.get_required()) text += " REQUIRED";
  return text;
}

}  // namespace

void plain_help_labels(CLI::App& app) {
  for (CLI::Option* option : app.get_options()) {
    if (option->get_type_size() == 0 || !option->get_option_text().empty()) continue;  // a flag, or set
    option->option_text(option_text(*option));
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) plain_help_labels(*sub);
}

std::string choices_label(const std::vector<std::string>& choices) {
  std::string label;
  for (const std::string& choice : choices) label += (label.empty() ? "" : "|") + choice;
  return label;
}

CLI::Validator token_count_suffixes() {
  auto expand = [](std::string& text) -> std::string {
    if (!has_count_suffix(text)) return "";
    std::string error;
    std::optional<int64_t> count = read_token_count(text, error);
    if (count) text = std::to_string(*count);
    return error;
  };
  return CLI::Validator(expand, "");
}

void add_version_flag(CLI::App& app, const std::string& tool) {
  app.set_version_flag("--version", tool + " " + KVTIER_VERSION, "Print the version and exit");
}

}  // namespace kvtier
