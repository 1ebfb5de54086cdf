#include "sim/cli/simulation_report.h"

#include <algorithm>
#include <functional>
#include <sstream>

#include "sim/cli/output.h"
#include "sim/core/units.h"
#include "sim/engine/metrics.h"

namespace kvtier {
namespace {

struct Row {
  std::string label;
  std::string cell;
  double value;  // for the ratio column; NaN when a ratio means nothing
};

double number_at(const nlohmann::json& j, const std::string& a, const std::string& b) {
  return j.contains(a) && j[a].is_object() && j[a].contains(b) ? j[a][b].get<double>() : std::nan("");
}

// The run's price and energy (sim/engine/run_cost.h).
void cost_rows(const nlohmann::json& cost, std::vector<Row>& rows) {
  auto dollars = [&](const std::string& label, const nlohmann::json& v) {
    if (v.is_null()) {
      rows.push_back({label, "-", std::nan("")});
      return;
    }
    rows.push_back({label, fixed("$%.2f", v.get<double>()), v.get<double>()});
  };
  dollars("price per hour", cost["usd_per_hour"]);
  dollars("$ per million tokens in SLO", cost["usd_per_million_tokens_in_slo"]);
  const double watts = cost["mean_power_w"].get<double>();
  rows.push_back({"mean power", fixed("%.0f W", watts), watts});
  const nlohmann::json& per_joule = cost["tokens_per_joule"];
  rows.push_back({"tokens per joule", per_joule.is_null() ? "-" : fixed("%.2f", per_joule.get<double>()),
                  per_joule.is_null() ? std::nan("") : per_joule.get<double>()});
}

std::vector<Row> rows_of(const nlohmann::json& s) {
  std::vector<Row> rows;
  auto seconds = [&](const std::string& label, const std::string& key, const std::string& p) {
    double v = number_at(s, key, p);
    rows.push_back({label, std::isnan(v) ? "-" : format_duration(v), v});
  };
  auto count = [&](const std::string& label, double v) {
    rows.push_back({label, with_commas(static_cast<long long>(v)), v});
  };
  count("requests completed", s["requests_completed"].get<double>());
  count("  in the window (the seed's goodput)", s["requests_completed_in_window"].get<double>());
  count("  after the window", s["requests_completed_after_window"].get<double>());
  count("goodput (in window, SLOs met)", s["goodput_requests"].get<double>());
  seconds("TTFT p50", "ttft_s", "p50");
  seconds("TTFT p95", "ttft_s", "p95");
  seconds("TTFT p99", "ttft_s", "p99");
  seconds("TTFT mean", "ttft_s", "mean");
  if (s["ttft_parts_s"].is_object()) {
    for (const std::string& part : ttft_part_names(s["ttft_parts_s"]))
      seconds("  " + part, "ttft_parts_s", part);
  }
  seconds("TPOT p50", "tpot_s", "p50");
  seconds("TPOT p95", "tpot_s", "p95");
  seconds("end-to-end p50", "e2e_s", "p50");
  seconds("end-to-end p95", "e2e_s", "p95");
  for (const auto& tier : s["hit_rate_tokens"]) {
    double rate = tier["rate"].get<double>();
    rows.push_back({"hit rate " + tier["tier"].get<std::string>(), fixed("%.1f %%", 100 * rate), rate});
  }
  rows.push_back({"hit rate total", fixed("%.1f %%", 100 * s["hit_rate_total"].get<double>()),
                  s["hit_rate_total"].get<double>()});
  count("recomputed tokens", s["recomputed_tokens"].get<double>());
  count("preemptions", s["preemptions"].get<double>());
  double moved = 0;
  for (const auto& entry : s["link_bytes"]) {
    std::string link = entry["link"].get<std::string>();
    double bytes = entry["bytes"].get<double>();
    if (link.starts_with("pcie_") || link.starts_with("nvme_") || link == "network") moved += bytes;
    rows.push_back({"bytes " + link, format_bytes(bytes), bytes});
  }
  rows.push_back({"bytes moved (PCIe, NVMe, network)", format_bytes(moved), moved});
  rows.push_back({"simulated time", format_duration(s["simulated_s"].get<double>()), std::nan("")});
  for (const auto& tier : s["sessions_fit"]) {
    const std::string label = "sessions of " + with_commas(tier["session_tokens"].get<long long>()) +
                              " tokens in " + tier["tier"].get<std::string>();
    count(label, tier["sessions"].get<double>());
  }
  if (s.contains("cost")) cost_rows(s["cost"], rows);
  return rows;
}

// The metrics of every variant, in order of first appearance (variants may differ in tiers and links).
std::vector<std::string> union_of_labels(const std::vector<std::vector<Row>>& columns) {
  std::vector<std::string> labels;
  for (const auto& column : columns) {
    auto at = labels.begin();
    for (const Row& row : column) {
      auto found = std::find(labels.begin(), labels.end(), row.label);
      at = found != labels.end() ? found + 1 : labels.insert(at, row.label) + 1;
    }
  }
  return labels;
}

// One table: rows are metrics, columns variants (plus last/first when there are two).
Table build_table(const nlohmann::json& result) {
  std::vector<std::string> headers{"metric"};
  std::vector<std::vector<Row>> columns;
  for (const auto& v : result["variants"]) {
    headers.push_back(v["name"].get<std::string>());
    columns.push_back(rows_of(v["summary"]));
  }
  bool ratio = columns.size() == 2;
  if (ratio) headers.push_back(headers[2] + " / " + headers[1]);
  Table table(headers);
  for (const std::string& label : union_of_labels(columns)) {
    std::vector<const Row*> cells_of;
    for (const auto& column : columns) {
      auto it = std::find_if(column.begin(), column.end(), [&](const Row& r) { return r.label == label; });
      cells_of.push_back(it == column.end() ? nullptr : &*it);
    }
    bool used =
        std::any_of(cells_of.begin(), cells_of.end(), [](const Row* r) { return r && r->value != 0; });
    if (!used && label.starts_with("bytes ")) continue;  // a link no variant used
    std::vector<std::string> cells{label};
    for (const Row* r : cells_of) cells.push_back(r ? r->cell : "-");
    if (ratio) {
      double a = cells_of[0] ? cells_of[0]->value : std::nan("");
      double b = cells_of[1] ? cells_of[1]->value : std::nan("");
      cells.push_back(std::isnan(a) || std::isnan(b) || a == 0 ? "" : format_ratio(b / a));
    }
    table.add_row(cells);
  }
  return table;
}

}  // namespace

void print_simulation_table(std::ostream& out, const nlohmann::json& result) {
  const nlohmann::json& first = result["variants"][0]["summary"];
  out << result["scenario"].get<std::string>() << "\n" << first["workload"].get<std::string>() << "\n\n";
  build_table(result).print(out);
  out << "\nwritten to " << result["out_dir"].get<std::string>() << "/\n";
}

std::string markdown_report(const nlohmann::json& result, bool with_plots) {
  std::ostringstream md;
  md << "# " << result["scenario"].get<std::string>() << "\n\n";
  md << "Made by `" << result["command"].get<std::string>() << "`.\n\n";
  md << "Workload: " << result["variants"][0]["summary"]["workload"].get<std::string>() << ".\n\n";
  std::ostringstream table;
  build_table(result).print(table);
  md << "```\n" << table.str() << "```\n\n";
  if (with_plots) {
    md << "![TTFT CDF](ttft_cdf.png)\n\n![TTFT in parts](ttft_parts.png)\n\n"
       << "![Hit rate per tier](hit_rate.png)\n\n![Link utilisation](link_utilisation.png)\n";
  }
  md << "\nPer-request data: `<variant>/requests.csv`; time series: `<variant>/timeseries.csv`; every figure "
        "above: `summary.json`.\n";
  return md.str();
}

}  // namespace kvtier
