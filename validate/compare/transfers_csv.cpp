#include "validate/compare/transfers_csv.h"

#include "validate/compare/csv_table.h"

namespace kvtier::validation {

std::vector<TransferRecord> read_transfers_csv(const std::filesystem::path& path) {
  CsvTable table = CsvTable::read(path);
  size_t path_column = table.column("path"), bytes = table.column("bytes");
  size_t start = table.column("start_s"), end = table.column("end_s");
  std::vector<TransferRecord> transfers;
  transfers.reserve(table.rows());
  for (size_t r = 0; r < table.rows(); ++r) {
    TransferRecord t{std::string(table.text(r, path_column)), table.number(r, bytes),
                     table.number(r, start), table.number(r, end)};
    if (t.path.empty()) table.fail(r, path_column, "expected the name of a transfer path");
    if (t.bytes < 0) table.fail(r, bytes, "expected a non-negative byte count");
    if (t.start_s < 0) table.fail(r, start, "expected a non-negative time");
    if (t.end_s < t.start_s) table.fail(r, end, "the transfer ends before it starts");
    if (!transfers.empty() && t.start_s < transfers.back().start_s) {
      table.fail(r, start,
                 "rows must be in the order transfers started; this one starts before the row above");
    }
    transfers.push_back(std::move(t));
  }
  return transfers;
}

}  // namespace kvtier::validation
