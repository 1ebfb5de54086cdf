// Token counts on the command line: "4096", "32K" or "1M", where K is 1024 tokens and M 1024 K (token
// counts are sized in powers of two, unlike the units of units.h). Shared by kvtier breakeven's --context,
// kvtier-hw breakeven's --contexts and --sweep, and every token or block count option (cli_help.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace kvtier {

// Whether `text` ends in a suffix (32K), so that read_token_count reads it; a plain number is left to the
// caller's integer parsing, which keeps its own messages and range checks (0 and negatives included).
bool has_count_suffix(const std::string& text);
// The count `text` gives, or nothing with `error` saying why ("expected a positive token count such as
// 4096 or 32K, got '0'").
std::optional<int64_t> read_token_count(const std::string& text, std::string& error);
// The count `text` gives; throws ConfigError naming `option` when it is not a positive count or overflows.
int64_t parse_token_count(const std::string& option, const std::string& text);

}  // namespace kvtier
