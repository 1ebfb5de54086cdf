// The serving scheduler's backend on a real machine: a wall clock, and the tiered store of real KV.
//
// The scheduler (sim/serving/scheduler.h) tells its backend every call it makes on the cache model; this
// backend repeats each on a TieredStore (hw/store/tiered_store.h), whose own copy of the cache model then
// makes the same placements, and whose copies move the real bytes: reloads from DRAM, reads from NVMe,
// offloads and writes down. The copies run when the call is made, on the serving thread, so a request's
// load has landed by the time the scheduler starts waiting for it, and the engine does no compute while
// the store copies (as an engine whose connector loads a request's KV before the step that needs it).
//
// Every cache call's copies become rows of transfers.csv as the simulator writes them: a load one row per
// tier it reads, each stored block a row of its own, each row spanning the batched copies that moved it
// (TieredStore::copies()): a store of a block that shared a batched offload with others lasts that offload,
// as a flow sharing its link with the others does in the simulator.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <unordered_map>
#include <vector>

#include "hw/store/tiered_store.h"
#include "sim/core/transfer_log.h"
#include "sim/serving/serving_backend.h"

namespace kvtier::hw {

class StoreBackend : public ServingBackend {
 public:
  explicit StoreBackend(TieredStore& store);

  double now() const override;
  // The load's copies ran in cache_admitted(): every load has landed when it starts.
  LoadHandle start_load(std::span<const double> bytes_by_tier, uint64_t request_id) override;
  bool load_done(LoadHandle) override { return true; }
  void cancel_load(LoadHandle) override {}
  // Stores ran with the cache call that caused them.
  void start_store(int, int, double, int64_t) override {}

  void cache_admitted(uint64_t request_id, std::span<const uint64_t> block_ids,
                      const std::vector<bool>& recompute_tier) override;
  void cache_released(uint64_t request_id) override;
  void cache_capacity_set(int tier, int64_t bytes) override;

  // Called after each release (the step runner gives the request's decode pages back).
  void on_release(std::function<void(uint64_t)> callback) { on_release_ = std::move(callback); }
  // Sets the clock's zero to now: serving starts.
  void restart_clock() { start_ = std::chrono::steady_clock::now(); }

  // The HBM page of each block of an admitted request, in chain order.
  const std::vector<int64_t>& hbm_pages(uint64_t request_id) const;
  const std::vector<TransferRecord>& transfers() const { return transfers_; }
  double transfer_seconds() const { return transfer_seconds_; }

 private:
  // Runs a store call, then logs what it moved, as for the request `cause` (kNoRequest: for none).
  template <typename Call>
  void logged(int64_t cause, Call&& call);
  // A time of the steady clock on the run's clock.
  double seconds(std::chrono::steady_clock::time_point t) const;

  TieredStore& store_;
  std::chrono::steady_clock::time_point start_;
  std::unordered_map<uint64_t, StoreAdmission> admissions_;
  std::vector<TransferRecord> transfers_;
  double transfer_seconds_ = 0;
  LoadHandle next_load_ = 0;
  std::function<void(uint64_t)> on_release_;
};

}  // namespace kvtier::hw
