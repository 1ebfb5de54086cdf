#include "sim/core/transfer_log.h"

#include <stdexcept>

namespace kvtier {
namespace {

void check_path(const std::string& path) {
  if (path.empty() || path.find_first_of(",\"\r\n") != std::string::npos) {
    throw std::invalid_argument("transfer path '" + path +
                                "': expected a name without commas, quotes or line breaks");
  }
}

}  // namespace

std::string transfer_path(const std::string& from_tier, const std::string& to_tier) {
  return from_tier + "->" + to_tier;
}

bool TransfersCsvWriter::StartsLater::operator()(const Held& a, const Held& b) const {
  if (a.start_s != b.start_s) return a.start_s > b.start_s;
  return a.order > b.order;
}

TransfersCsvWriter::TransfersCsvWriter(std::ostream& out) : out_(out) {
  out_ << kTransfersHeader << '\n';
}

void TransfersCsvWriter::add(TransferRecord transfer) {
  check_path(transfer.path);
  const double start_s = transfer.start_s;
  std::vector<TransferRecord> one;
  one.push_back(std::move(transfer));
  held_.push({start_s, added_++, std::move(one)});
  ++held_transfers_;
}

void TransfersCsvWriter::add_batch(std::vector<TransferRecord> batch) {
  if (batch.empty()) return;
  for (const TransferRecord& t : batch) check_path(t.path);
  const double start_s = batch.front().start_s;
  const uint64_t order = added_;
  added_ += batch.size();
  held_transfers_ += batch.size();
  held_.push({start_s, order, std::move(batch)});
}

void TransfersCsvWriter::write_started_by(double horizon_s) {
  while (!held_.empty() && held_.top().start_s <= horizon_s) write_next();
}

void TransfersCsvWriter::close() {
  while (!held_.empty()) write_next();
}

// The earliest held transfers' rows: path,bytes,start_s,end_s,request, numbers in their shortest exact
// form.
void TransfersCsvWriter::write_next() {
  const Held& held = held_.top();
  for (const TransferRecord& t : held.transfers) {
    row_.clear();
    row_ += t.path;
    row_ += ',';
    bytes_text_.append(row_, t.bytes);
    row_ += ',';
    start_text_.append(row_, t.start_s);
    row_ += ',';
    end_text_.append(row_, t.end_s);
    row_ += ',';
    append_integer(row_, t.request);
    row_ += '\n';
    out_.write(row_.data(), static_cast<std::streamsize>(row_.size()));
  }
  held_transfers_ -= held.transfers.size();
  held_.pop();
}

void write_transfers_csv(std::ostream& out, std::vector<TransferRecord> transfers) {
  TransfersCsvWriter writer(out);
  for (TransferRecord& t : transfers) writer.add(std::move(t));
  writer.close();
}

}  // namespace kvtier
