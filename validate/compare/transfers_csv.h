// transfers.csv: one row per KV transfer of a run, so that the time each transfer path takes can be
// compared between a simulation and a hardware run, transfer by transfer.
//
//   path,bytes,start_s,end_s
//   dram->hbm,262144,0.01,0.03
//
// path names where the bytes went, `<from tier>-><to tier>` by convention (any name without commas or
// quotes; both runs must use the same names); bytes is the size of the copy; start_s and end_s are seconds
// on the run's clock (the clock of requests.csv). Rows are in the order the transfers started: start_s
// never decreases, so that the k-th transfer on a path of one run is matched with the k-th of the other.
// The file is optional in an output folder: without it, transfer times are "not compared".
#pragma once

#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

namespace kvtier::validation {

inline constexpr const char* kTransfersFile = "transfers.csv";
inline constexpr const char* kTransfersHeader = "path,bytes,start_s,end_s";

struct Transfer {
  std::string path;
  double bytes = 0;
  double start_s = 0;
  double end_s = 0;

  double seconds() const { return end_s - start_s; }
};

// Writes the header and the rows sorted by start_s (stable: transfers that start together keep their
// order). Throws std::invalid_argument for a path holding a comma, a quote or a line break, or empty.
void write_transfers_csv(std::ostream& out, std::vector<Transfer> transfers);

// Throws ConfigError located at the cell for a missing column, a bad number, negative bytes or times,
// end_s before start_s, or a start_s earlier than the row before.
std::vector<Transfer> read_transfers_csv(const std::filesystem::path& path);

}  // namespace kvtier::validation
