#include "validate/compare/run_folder.h"

#include <algorithm>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_set>

#include "sim/core/config.h"
#include "sim/core/json_text.h"
#include "validate/compare/csv_table.h"

namespace kvtier::validation {
namespace {

constexpr std::string_view kHitPrefix = "hit_tokens_";

nlohmann::json read_summary(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError(path.string() + ": cannot read the file (is this a kvtier output folder?)");
  std::stringstream text;
  text << in.rdbuf();
  return parse_json_text(text.str(), path.string());
}

// json[key] checked for its type, failing as "file: key.path: expected ...".
const nlohmann::json& member(const nlohmann::json& j, const std::string& key, const std::string& where,
                             nlohmann::json::value_t type, const char* expected) {
  auto same_kind = [&](const nlohmann::json& v) {
    if (type == nlohmann::json::value_t::number_float) return v.is_number();
    return v.type() == type;
  };
  if (!j.is_object() || !j.contains(key) || !same_kind(j.at(key))) {
    throw ConfigError(where + (where.ends_with(": ") ? "" : ".") + key + ": expected " + expected);
  }
  return j.at(key);
}

VariantRun variant_of(const nlohmann::json& entry, const std::string& where) {
  using T = nlohmann::json::value_t;
  VariantRun v;
  v.name = member(entry, "name", where, T::string, "the variant's name").get<std::string>();
  if (v.name.empty() || v.name.find('/') != std::string::npos || v.name == "." || v.name == "..") {
    throw ConfigError(where + ".name: expected a folder name, got '" + v.name + "'");
  }
  const nlohmann::json& summary = member(entry, "summary", where, T::object, "the variant's summary");
  v.window_s =
      member(summary, "window_s", where + ".summary", T::number_float, "a number of seconds").get<double>();
  const nlohmann::json& links =
      member(summary, "link_bytes", where + ".summary", T::array, "a list of {link, bytes}");
  for (size_t i = 0; i < links.size(); ++i) {
    std::string at = where + ".summary.link_bytes[" + std::to_string(i) + "]";
    v.link_bytes.push_back({member(links[i], "link", at, T::string, "a link name").get<std::string>(),
                            member(links[i], "bytes", at, T::number_float, "a byte count").get<double>()});
  }
  return v;
}

// Whether an id is one of the variant's requests.
std::function<bool(uint64_t)> request_ids(const VariantRun& v) {
  std::vector<uint64_t> ids;
  ids.reserve(v.requests.size());
  for (const RequestTimes& r : v.requests) ids.push_back(r.id);
  std::sort(ids.begin(), ids.end());
  return [ids = std::move(ids)](uint64_t id) { return std::binary_search(ids.begin(), ids.end(), id); };
}

}  // namespace

std::optional<double> RequestTimes::tpot_s() const {
  if (!completed() || !started() || output_tokens <= 1) return std::nullopt;
  return (completion_s - first_token_s) / static_cast<double>(output_tokens - 1);
}

std::optional<double> RequestTimes::e2e_s() const {
  if (!completed()) return std::nullopt;
  return completion_s - arrival_s;
}

int64_t VariantRun::completed_in_window() const {
  int64_t n = 0;
  for (const RequestTimes& r : requests) n += r.completed() && r.completion_s <= window_s;
  return n;
}

void read_requests_csv(const std::filesystem::path& path, VariantRun& v) {
  CsvTable table = CsvTable::read(path);
  v.requests_file = path.string();
  size_t id = table.column("id"), arrival = table.column("arrival_s"), first = table.column("first_token_s");
  size_t completion = table.column("completion_s"), ttft = table.column("ttft_s");
  size_t input = table.column("input_tokens"), output = table.column("output_tokens");
  const std::optional<size_t> session = table.find_column("session"), turn = table.find_column("turn");
  std::vector<size_t> hit_columns;
  for (size_t c = 0; c < table.header().size(); ++c) {
    if (!table.header()[c].starts_with(kHitPrefix)) continue;
    hit_columns.push_back(c);
    v.tiers.push_back(table.header()[c].substr(kHitPrefix.size()));
  }
  v.hit_tokens.assign(hit_columns.size(), 0);
  v.requests.reserve(table.rows());
  std::unordered_set<uint64_t> seen;
  seen.reserve(table.rows());
  for (size_t r = 0; r < table.rows(); ++r) {
    int64_t request_id = table.integer(r, id);
    if (request_id < 0) table.fail(r, id, "expected a non-negative request id");
    if (!seen.insert(static_cast<uint64_t>(request_id)).second) {
      table.fail(r, id, "request id " + std::to_string(request_id) + " appears twice");
    }
    RequestTimes t{static_cast<uint64_t>(request_id),
                   table.number(r, arrival),
                   table.number(r, first),
                   table.number(r, completion),
                   table.number(r, ttft),
                   table.integer(r, input),
                   table.integer(r, output),
                   session ? table.integer(r, *session) : -1,
                   turn ? table.integer(r, *turn) : 0,
                   table.line(r)};
    if (t.started() && t.ttft_s < 0) table.fail(r, ttft, "negative for a request that has a first token");
    if (t.output_tokens < 0) table.fail(r, output, "expected a non-negative token count");
    for (size_t h = 0; h < hit_columns.size(); ++h) v.hit_tokens[h] += table.integer(r, hit_columns[h]);
    v.requests.push_back(t);
  }
}

RunSpec read_run_spec(const std::filesystem::path& dir) {
  using T = nlohmann::json::value_t;
  std::filesystem::path path = dir / kSummaryFile;
  nlohmann::json summary = read_summary(path);
  const std::string where = path.string() + ": ";
  RunSpec spec;
  spec.scenario_name =
      member(summary, "scenario", where, T::string, "the scenario's name").get<std::string>();
  const nlohmann::json& run =
      member(summary, "run", where, T::object, "an object {scenario, trace, set, calibration}");
  spec.scenario =
      member(run, "scenario", where + "run", T::string, "the SCENARIO argument").get<std::string>();
  auto path_or_null = [&](const char* key) -> std::optional<std::string> {
    if (!run.contains(key) || run.at(key).is_null()) return std::nullopt;
    return member(run, key, where + "run", T::string, "a path or null").get<std::string>();
  };
  spec.trace = path_or_null("trace");
  spec.calibration = path_or_null("calibration");
  const nlohmann::json& set = member(run, "set", where + "run", T::array, "a list of key=value overrides");
  for (size_t i = 0; i < set.size(); ++i) {
    if (!set[i].is_string()) {
      throw ConfigError(where + "run.set[" + std::to_string(i) + "]: expected a key=value override");
    }
    spec.set.push_back(set[i].get<std::string>());
  }
  return spec;
}

RunFolder read_run_folder(const std::filesystem::path& dir) {
  if (!std::filesystem::is_directory(dir)) throw ConfigError(dir.string() + ": not a folder");
  std::filesystem::path summary_path = dir / kSummaryFile;
  nlohmann::json summary = read_summary(summary_path);
  const nlohmann::json& variants = member(summary, "variants", summary_path.string() + ": ",
                                          nlohmann::json::value_t::array, "a list of variants");
  RunFolder folder{dir.string(), {}};
  for (size_t i = 0; i < variants.size(); ++i) {
    VariantRun v = variant_of(variants[i], summary_path.string() + ": variants[" + std::to_string(i) + "]");
    read_requests_csv(dir / v.name / kRequestsFile, v);
    std::filesystem::path transfers = dir / v.name / kTransfersFile;
    v.transfers_file = transfers.string();
    if (std::filesystem::exists(transfers)) v.transfers = read_transfers_csv(transfers, request_ids(v));
    folder.variants.push_back(std::move(v));
  }
  if (folder.variants.empty()) throw ConfigError(summary_path.string() + ": variants: the list is empty");
  return folder;
}

}  // namespace kvtier::validation
