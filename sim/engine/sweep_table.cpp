#include "sim/engine/sweep_table.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

namespace kvtier {
namespace {

void flatten(const std::string& prefix, const nlohmann::json& value,
             std::vector<std::pair<std::string, nlohmann::json>>& out);

// An element of a list is named by its text fields, so that a column means the same tier or link in every
// row even where lists differ in length.
std::string element_label(const nlohmann::json& element) {
  std::string label;
  if (!element.is_object()) return label;
  for (const auto& [key, field] : element.items()) {
    if (!field.is_string()) continue;
    if (!label.empty()) label += '.';
    label += field.get<std::string>();
  }
  return label;
}

void flatten_list(const std::string& prefix, const nlohmann::json& list,
                  std::vector<std::pair<std::string, nlohmann::json>>& out) {
  std::vector<std::string> labels;
  for (const nlohmann::json& element : list) labels.push_back(element_label(element));
  for (size_t i = 0; i < list.size(); ++i) {
    bool unique = !labels[i].empty() && std::count(labels.begin(), labels.end(), labels[i]) == 1;
    flatten(prefix + "." + (unique ? labels[i] : std::to_string(i)), list[i], out);
  }
}

void flatten(const std::string& prefix, const nlohmann::json& value,
             std::vector<std::pair<std::string, nlohmann::json>>& out) {
  if (value.is_object()) {
    for (const auto& [key, field] : value.items()) flatten(prefix.empty() ? key : prefix + "." + key, field, out);
  } else if (value.is_array()) {
    flatten_list(prefix, value, out);
  } else if (value.is_number() || value.is_boolean()) {
    out.emplace_back(prefix, value);
  }
}

std::string csv_cell(const nlohmann::json& value) {
  if (value.is_null()) return "";
  if (!value.is_string()) return value.dump();
  const std::string& text = value.get<std::string>();
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

}  // namespace

std::vector<std::pair<std::string, nlohmann::json>> flatten_metrics(const nlohmann::json& summary) {
  std::vector<std::pair<std::string, nlohmann::json>> out;
  flatten("", summary, out);
  return out;
}

nlohmann::json sweep_results(const nlohmann::json& sweep, const std::vector<std::string>& keys,
                             const std::vector<nlohmann::json>& points) {
  std::vector<std::string> columns{"point"};
  columns.insert(columns.end(), keys.begin(), keys.end());
  columns.insert(columns.end(), {"seed", "variant"});
  std::set<std::string> known(columns.begin(), columns.end());
  nlohmann::json rows = nlohmann::json::array();
  for (const nlohmann::json& point : points) {
    for (const nlohmann::json& variant : point["variants"]) {
      nlohmann::json row = {{"point", point["point"]}, {"seed", point["seed"]}, {"variant", variant["name"]}};
      for (size_t k = 0; k < keys.size(); ++k) row[keys[k]] = point["values"][k];
      for (auto& [name, value] : flatten_metrics(variant["summary"])) {
        if (known.insert(name).second) columns.push_back(name);
        row[name] = value;
      }
      rows.push_back(std::move(row));
    }
  }
  return {{"sweep", sweep}, {"keys", keys}, {"columns", columns}, {"rows", rows}};
}

std::string sweep_csv(const nlohmann::json& results) {
  std::ostringstream out;
  const nlohmann::json& columns = results["columns"];
  for (size_t c = 0; c < columns.size(); ++c) out << (c ? "," : "") << csv_cell(columns[c]);
  out << "\n";
  for (const nlohmann::json& row : results["rows"]) {
    for (size_t c = 0; c < columns.size(); ++c) {
      auto cell = row.find(columns[c].get<std::string>());
      out << (c ? "," : "") << (cell == row.end() ? "" : csv_cell(*cell));
    }
    out << "\n";
  }
  return out.str();
}

std::vector<SweepMeans> mean_over_seeds(const nlohmann::json& results, const std::vector<std::string>& metrics) {
  std::vector<SweepMeans> table;
  std::map<std::pair<std::string, std::string>, size_t> position;  // (point, variant) -> row of `table`
  std::vector<std::vector<std::pair<double, size_t>>> sums;        // per row, per metric: sum and count
  for (const nlohmann::json& row : results["rows"]) {
    auto key = std::make_pair(row["point"].get<std::string>(), row["variant"].get<std::string>());
    auto [it, added] = position.emplace(key, table.size());
    if (added) {
      SweepMeans means{key.first, {}, key.second, 0, {}};
      for (const nlohmann::json& k : results["keys"]) means.values.push_back(row[k.get<std::string>()]);
      table.push_back(std::move(means));
      sums.emplace_back(metrics.size(), std::make_pair(0.0, size_t{0}));
    }
    ++table[it->second].seeds;
    for (size_t m = 0; m < metrics.size(); ++m) {
      auto cell = row.find(metrics[m]);
      if (cell == row.end() || !cell->is_number()) continue;
      sums[it->second][m].first += cell->get<double>();
      ++sums[it->second][m].second;
    }
  }
  for (size_t r = 0; r < table.size(); ++r) {
    for (const auto& [sum, count] : sums[r]) {
      table[r].means.push_back(count ? std::optional<double>(sum / static_cast<double>(count)) : std::nullopt);
    }
  }
  return table;
}

}  // namespace kvtier
