#include "validate/compare/transfers_csv.h"

#include <string>

#include "validate/compare/csv_table.h"

namespace kvtier::validation {

TransferRows read_transfers_csv(const std::filesystem::path& path,
                                const std::function<bool(uint64_t)>& is_request) {
  CsvTable table = CsvTable::read(path);
  size_t path_column = table.column("path"), bytes = table.column("bytes");
  size_t start = table.column("start_s"), end = table.column("end_s");
  std::optional<size_t> request = table.find_column("request");
  TransferRows transfers;
  transfers.names_requests = request.has_value();
  std::vector<TransferRecord>& rows = transfers.rows;
  rows.reserve(table.rows());
  for (size_t r = 0; r < table.rows(); ++r) {
    TransferRecord t{std::string(table.text(r, path_column)), table.number(r, bytes),
                     table.number(r, start), table.number(r, end)};
    if (t.path.empty()) table.fail(r, path_column, "expected the name of a transfer path");
    if (t.bytes < 0) table.fail(r, bytes, "expected a non-negative byte count");
    if (t.start_s < 0) table.fail(r, start, "expected a non-negative time");
    if (t.end_s < t.start_s) table.fail(r, end, "the transfer ends before it starts");
    if (!rows.empty() && t.start_s < rows.back().start_s) {
      table.fail(r, start,
                 "rows must be in the order transfers started; this one starts before the row above");
    }
    if (request) {
      t.request = table.integer(r, *request);
      if (t.request != kNoRequest && (t.request < 0 || !is_request(static_cast<uint64_t>(t.request)))) {
        table.fail(r, *request,
                   "expected -1 or the id of a request in requests.csv; there is no request " +
                       std::to_string(t.request));
      }
    }
    rows.push_back(std::move(t));
  }
  return transfers;
}

}  // namespace kvtier::validation
