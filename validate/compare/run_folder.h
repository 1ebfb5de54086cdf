// An output folder of `kvtier simulate` (or of a hardware run written in the same schema), reduced to
// what a validation compares: per variant, each request's times and token counts, the hit tokens per
// tier summed over requests, the bytes per link from summary.json, and the transfers when the folder
// has a transfers.csv. Reading checks the schema and names the file, line and column of what is wrong.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "validate/compare/transfers_csv.h"

namespace kvtier::validation {

inline constexpr const char* kSummaryFile = "summary.json";
inline constexpr const char* kRequestsFile = "requests.csv";

struct RequestTimes {
  uint64_t id = 0;
  double arrival_s = 0;
  double first_token_s = -1;  // -1: no first token
  double completion_s = -1;   // -1: not completed
  double ttft_s = -1;
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  int64_t session = -1;  // closed-loop runs: the request is turn `turn` of this session
  int64_t turn = 0;
  size_t line = 0;  // line in requests.csv, for messages

  bool started() const { return first_token_s >= 0; }
  bool completed() const { return completion_s >= 0; }
  // Time per output token after the first: defined for a completed request of more than one output token.
  std::optional<double> tpot_s() const;
  std::optional<double> e2e_s() const;
};

struct LinkBytes {
  std::string link;
  double bytes = 0;
};

struct VariantRun {
  std::string name;
  double window_s = 0;
  std::string requests_file;                       // path, for messages
  std::vector<RequestTimes> requests;              // in file order
  std::vector<std::string> tiers;                  // from the hit_tokens_<tier> columns, fastest first
  std::vector<int64_t> hit_tokens;                 // per tier, summed over requests
  std::vector<LinkBytes> link_bytes;               // summary.json order
  std::string transfers_file;                      // path, for messages (set whether or not the file exists)
  std::optional<TransferRows> transfers;           // absent: the folder has no transfers.csv

  int64_t completed_in_window() const;
};

struct RunFolder {
  std::string dir;
  std::vector<VariantRun> variants;  // summary.json order
};

// How a run was made, as its summary.json records it: "scenario" (the scenario's name) and the "run"
// object that kvtier-hw serve writes, so that `kvtier validate SCENARIO --hw DIR` simulates the same.
struct RunSpec {
  std::string scenario_name;               // summary.json: scenario
  std::string scenario;                    // run.scenario: the SCENARIO argument as given
  std::optional<std::string> trace;        // run.trace: the --trace file; null or absent: none
  std::vector<std::string> set;            // run.set: the --set overrides, key=value, in order
  std::optional<std::string> calibration;  // run.calibration: the calibration file; null or absent: none
};

// Reads DIR/summary.json's "scenario" and "run". Throws ConfigError "DIR/summary.json: run.trace: expected
// ..." for a missing or mistyped key.
RunSpec read_run_spec(const std::filesystem::path& dir);

// Reads DIR/summary.json, DIR/<variant>/requests.csv and, where present, DIR/<variant>/transfers.csv.
// Throws ConfigError naming the file (and line and column in a CSV) when one is missing, malformed, lacks
// a column or key, or repeats a request id.
RunFolder read_run_folder(const std::filesystem::path& dir);

// One variant's requests.csv alone (the columns read: id, arrival_s, first_token_s, completion_s, ttft_s,
// input_tokens, output_tokens, hit_tokens_<tier>..., and session and turn where the file has them).
void read_requests_csv(const std::filesystem::path& path, VariantRun& variant);

}  // namespace kvtier::validation
