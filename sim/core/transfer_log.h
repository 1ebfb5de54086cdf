// transfers.csv: one row per KV transfer of a serving run, so that the time each transfer path takes can
// be compared between a simulation and a hardware run, transfer by transfer. Both engines write it (the
// simulator from its SimGrid Comms, kvtier-hw serve from its copies) and `kvtier validate` reads it
// (validate/compare/transfers_csv.h); so the record and the writer live here, with neither SimGrid nor a
// GPU runtime.
//
//   path,bytes,start_s,end_s,request
//   dram->hbm,262144,0.01,0.03,7
//
// path names where the bytes went, `<from tier>-><to tier>` with the cache's tier names (any name without
// commas, quotes or line breaks; both runs must use the same names); bytes is the size of the copy as the
// link carries it; start_s and end_s are seconds on the run's clock (the clock of requests.csv). Rows are
// in the order the transfers started: start_s never decreases. Numbers are written in the shortest form that
// reads back to the same double, so sums of bytes compare exactly. request is the id (requests.csv's) of the
// request whose cache operation moved the bytes: its admission's loads and evictions, its release's stores;
// -1 where none did (HBM's cache area shrinking as decode KV grows). Both engines run the same scheduler, so
// a request's transfers are the same work in both, and `kvtier validate` pairs them by request.
#pragma once

#include <cstdint>
#include <ostream>
#include <queue>
#include <string>
#include <vector>

#include "sim/core/csv_text.h"

namespace kvtier {

inline constexpr const char* kTransfersFile = "transfers.csv";
inline constexpr const char* kTransfersHeader = "path,bytes,start_s,end_s,request";
inline constexpr int64_t kNoRequest = -1;

struct TransferRecord {
  std::string path;
  double bytes = 0;
  double start_s = 0;
  double end_s = 0;
  int64_t request = kNoRequest;

  double seconds() const { return end_s - start_s; }
};

// "<from>-><to>", the path of a copy between two named tiers.
std::string transfer_path(const std::string& from_tier, const std::string& to_tier);

// Writes transfers.csv as a run goes. Transfers are added as they end, which is not the order they
// started in: each is held until the run says that no transfer added later can start before it
// (write_started_by), and the rows come out sorted by start_s, transfers that start together in the order
// they were added. Throws std::invalid_argument for a path holding a comma, a quote or a line break, or
// empty.
class TransfersCsvWriter {
 public:
  explicit TransfersCsvWriter(std::ostream& out);  // writes the header
  void add(TransferRecord transfer);
  // Transfers that started together (one batch of stores), held as one: a long run logs millions.
  // REQUIRES: every transfer of `batch` has the same start_s.
  void add_batch(std::vector<TransferRecord> batch);
  // Writes every held transfer that started at or before `horizon_s`. REQUIRES: no transfer added from
  // now on starts before horizon_s.
  void write_started_by(double horizon_s);
  void close();  // writes every transfer still held
  size_t held() const { return held_transfers_; }

 private:
  struct Held {
    double start_s;
    uint64_t order;
    std::vector<TransferRecord> transfers;  // in the order added
  };
  struct StartsLater {
    bool operator()(const Held& a, const Held& b) const;
  };
  void write_next();

  std::ostream& out_;
  std::string row_;
  ShortestText bytes_text_, start_text_, end_text_;
  std::priority_queue<Held, std::vector<Held>, StartsLater> held_;
  uint64_t added_ = 0;
  size_t held_transfers_ = 0;
};

// All of `transfers` through a TransfersCsvWriter.
void write_transfers_csv(std::ostream& out, std::vector<TransferRecord> transfers);

}  // namespace kvtier
