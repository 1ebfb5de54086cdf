// Reading transfers.csv (the format and the writer: sim/core/transfer_log.h), checked row by row, so that
// a hardware run's file that is out of order or malformed fails naming the line and column.
// The file is optional in an output folder: without it, transfer times and bytes per path are
// "not compared". Its `request` column is optional too: files written before it existed lack it, and
// their transfers pair by order alone.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <vector>

#include "sim/core/transfer_log.h"

namespace kvtier::validation {

struct TransferRows {
  std::vector<TransferRecord> rows;  // request kNoRequest throughout without the column
  bool names_requests = false;       // the file has the request column
};

// `is_request(id)` says whether requests.csv holds the request `id`. Throws ConfigError located at the
// cell for a missing column, a bad number, negative bytes or times, end_s before start_s, a start_s
// earlier than the row before, or a request that is neither -1 nor one of requests.csv's.
TransferRows read_transfers_csv(const std::filesystem::path& path,
                                const std::function<bool(uint64_t)>& is_request);

}  // namespace kvtier::validation
