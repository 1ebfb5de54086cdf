// How a simulation's summary (summary.json) reads to a person: a terminal table with one column per
// variant (and the ratio of the last to the first when there are two), and the same table as Markdown
// with the plots for report.md.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

namespace kvtier {

void print_simulation_table(std::ostream& out, const nlohmann::json& result);
std::string markdown_report(const nlohmann::json& result, bool with_plots);

}  // namespace kvtier
