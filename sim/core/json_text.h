// JSON text as the project's readers take it: a document that does not parse becomes a ConfigError
// "name:line:column: invalid JSON: reason", so that every JSON file kvtier reads (calibrations, Hugging
// Face config.json, break-even sweeps, output folders' summary.json) fails the same way.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace kvtier {

// Parses `text` (`name` stands for it in messages), with `callback` as nlohmann's parser callback (which
// may throw a ConfigError of its own). A syntax error is located where the parser stopped, a number too
// large for a double at its first character.
nlohmann::json parse_json_text(const std::string& text, const std::string& name,
                               const nlohmann::json::parser_callback_t& callback = nullptr);

// "line:column" (both from 1) of the character at `offset` (from 0) of `text`.
std::string line_column(const std::string& text, size_t offset);

}  // namespace kvtier
