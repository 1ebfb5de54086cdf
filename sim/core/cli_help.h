// What kvtier and kvtier-hw show and accept on the command line beyond CLI11's defaults.
//
// CLI11's --help labels an option with its internals: "INT:NONNEGATIVE", "ENUM:value in {json->1,table->0}
// OR {1,0}", a flag as "--no-plots{false}". plain_help_labels() relabels every option of an app, at any
// depth, in the user's terms: N for an integer, NUM for a number, TEXT, the choices of an option that gave
// them (choices_label), its default and REQUIRED. token_count_suffixes() lets an integer option take a token
// or block count as 4096, 32K or 1M, as --context always did (K = 1024, token_count.h).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace kvtier {

// Call after every option is added and check_numeric_options() has run.
void plain_help_labels(CLI::App& app);

// The label of an option that takes one of `choices`: "table|json".
std::string choices_label(const std::vector<std::string>& choices);

// A transform for an integer option (add it before ->check()): "32K" becomes "32768" before CLI11 converts
// it; text without a suffix passes unchanged, so the numeric checks word the errors.
CLI::Validator token_count_suffixes();

// "--version" printing "<tool> <version>", the project's version from CMake.
void add_version_flag(CLI::App& app, const std::string& tool);

}  // namespace kvtier
