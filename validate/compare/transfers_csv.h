// Reading transfers.csv (the format and the writer: sim/core/transfer_log.h), checked row by row, so that
// a hardware run's file that is out of order or malformed fails naming the line and column.
// The file is optional in an output folder: without it, transfer times and bytes per path are
// "not compared".
#pragma once

#include <filesystem>
#include <vector>

#include "sim/core/transfer_log.h"

namespace kvtier::validation {

// Throws ConfigError located at the cell for a missing column, a bad number, negative bytes or times,
// end_s before start_s, or a start_s earlier than the row before.
std::vector<TransferRecord> read_transfers_csv(const std::filesystem::path& path);

}  // namespace kvtier::validation
