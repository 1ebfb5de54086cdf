#include "sim/core/transfer_log.h"

#include <algorithm>
#include <charconv>
#include <stdexcept>

namespace kvtier {
namespace {

// The shortest text that reads back as the same double.
void write_number(std::ostream& out, double value) {
  char buffer[32];
  char* end = std::to_chars(buffer, buffer + sizeof buffer, value).ptr;
  out.write(buffer, end - buffer);
}

}  // namespace

std::string transfer_path(const std::string& from_tier, const std::string& to_tier) {
  return from_tier + "->" + to_tier;
}

void write_transfers_csv(std::ostream& out, std::vector<TransferRecord> transfers) {
  std::stable_sort(transfers.begin(), transfers.end(),
                   [](const TransferRecord& a, const TransferRecord& b) { return a.start_s < b.start_s; });
  out << kTransfersHeader << '\n';
  for (const TransferRecord& t : transfers) {
    if (t.path.empty() || t.path.find_first_of(",\"\r\n") != std::string::npos) {
      throw std::invalid_argument("transfer path '" + t.path +
                                  "': expected a name without commas, quotes or line breaks");
    }
    out << t.path << ',';
    write_number(out, t.bytes);
    out << ',';
    write_number(out, t.start_s);
    out << ',';
    write_number(out, t.end_s);
    out << '\n';
  }
}

}  // namespace kvtier
