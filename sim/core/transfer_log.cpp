#include "sim/core/transfer_log.h"

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

bool TransfersCsvWriter::StartsLater::operator()(const Held& a, const Held& b) const {
  if (a.transfer.start_s != b.transfer.start_s) return a.transfer.start_s > b.transfer.start_s;
  return a.order > b.order;
}

TransfersCsvWriter::TransfersCsvWriter(std::ostream& out) : out_(out) {
  out_ << kTransfersHeader << '\n';
}

void TransfersCsvWriter::add(TransferRecord transfer) {
  if (transfer.path.empty() || transfer.path.find_first_of(",\"\r\n") != std::string::npos) {
    throw std::invalid_argument("transfer path '" + transfer.path +
                                "': expected a name without commas, quotes or line breaks");
  }
  held_.push({std::move(transfer), added_++});
}

void TransfersCsvWriter::write_started_by(double horizon_s) {
  while (!held_.empty() && held_.top().transfer.start_s <= horizon_s) {
    write_row(held_.top().transfer);
    held_.pop();
  }
}

void TransfersCsvWriter::close() {
  while (!held_.empty()) {
    write_row(held_.top().transfer);
    held_.pop();
  }
}

void TransfersCsvWriter::write_row(const TransferRecord& t) {
  out_ << t.path << ',';
  write_number(out_, t.bytes);
  out_ << ',';
  write_number(out_, t.start_s);
  out_ << ',';
  write_number(out_, t.end_s);
  out_ << '\n';
}

void write_transfers_csv(std::ostream& out, std::vector<TransferRecord> transfers) {
  TransfersCsvWriter writer(out);
  for (TransferRecord& t : transfers) writer.add(std::move(t));
  writer.close();
}

}  // namespace kvtier
