// The command-line checks kvtier and kvtier-hw share: numeric options, and usage errors in plain words.
//
// CLI11 reads "nan" and "inf" into a double without complaint; its PositiveNumber and NonNegativeNumber
// validators let NaN through and word a refusal as "Value 0 not in range 0.000000 to 1797...", a bound of
// 309 digits; an unknown option only yields "The following arguments were not expected". Commands go on
// declaring ranges with CLI11's validators (->check(CLI::PositiveNumber)); check_numeric_options() walks
// the whole app once, after every command is added, so that no numeric option of any subcommand escapes:
//   - every option CLI11 converts to a number (its type INT, UINT or FLOAT) must read as one: an integer
//     for INT and UINT (a minus sign is refused for UINT, which CLI11 would wrap), a finite number for FLOAT;
//   - an option that declared CLI::PositiveNumber must be above 0, CLI::NonNegativeNumber at least 0;
//   - a refusal reads "--jobs: expected a positive integer, got 0".
// report_usage_error() is what main() does with a CLI::ParseError: an unknown option is named with the
// closest option of its subcommand ("unknown option --modle (did you mean --model?)"), an unknown command
// with the closest command, and every usage error exits with status 2, as bad configuration does.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace kvtier {

// Gives every numeric option of `app` and of its subcommands, at any depth, the checks above. Call once,
// after the options are added and before parsing.
void check_numeric_options(CLI::App& app);

// The message for a usage error caught from app.parse(): the rewrites above, or CLI11's own message.
std::string usage_error_message(const CLI::App& app, const CLI::ParseError& error);

// Help and version requests print as CLI11 prints them and return 0; any other error prints
// "<tool>: <message>" and a pointer to --help on stderr and returns 2.
int report_usage_error(const CLI::App& app, const CLI::ParseError& error, const std::string& tool);

}  // namespace kvtier
