// The stores of one cache call go as one batch, as the GPU's TieredStore moves them (store_queue.h): every
// store of the batch spans it, and the batch takes one latency plus its bytes over the link's bandwidth.
// Times by hand from configs/hardware/h100-sxm.yaml: an HBM -> DRAM store crosses PCIe device to host at
// 55 GB/s after 2.8 us; the DRAM link (600 GB/s, no latency) is not the bottleneck.
#include "sim/engine/simgrid/store_queue.h"

#include <gtest/gtest.h>

#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "sim/core/config_files.h"
#include "sim/engine/isolated_run.h"

namespace kvtier {
namespace {

namespace sg4 = simgrid::s4u;

constexpr double kLatency = 2.8e-6;
constexpr double kD2hBandwidth = 55e9;
constexpr double kBlock = 512.0 * 131072;  // Llama-3.1-8B's 512 tokens × 128 KiB
constexpr int64_t kCause = 7;
constexpr double kOneBlockAlone = kLatency + kBlock / kD2hBandwidth;  // a one-block batch, alone on PCIe

struct Row {
  std::string path;
  double bytes = 0, start_s = 0, end_s = 0;
  int64_t request = 0;
};

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> cells;
  std::stringstream in(line);
  for (std::string cell; std::getline(in, cell, ',');) cells.push_back(cell);
  return cells;
}

// The rows of a transfers.csv, header left out.
std::vector<Row> rows_of(std::istream& csv) {
  std::vector<Row> rows;
  std::string line;
  std::getline(csv, line);
  while (std::getline(csv, line)) {
    const std::vector<std::string> cells = split(line);
    rows.push_back({cells.at(0), std::stod(cells.at(1)), std::stod(cells.at(2)), std::stod(cells.at(3)),
                    std::stoll(cells.at(4))});
  }
  return rows;
}

// What a run of the queues shows: its stores' rows, and what `body` noted of the queues as it ran.
struct QueuesRun {
  std::vector<Row> rows;
  nlohmann::json noted;
};

// Runs `body` as an actor on one H100 SXM, in a child process (a SimGrid engine per process), then follows
// the batches in flight to their end.
QueuesRun run_queues(const std::function<void(StoreQueues&, Platform&, nlohmann::json& noted)>& body) {
  const nlohmann::json result = run_isolated([&] {
    int argc = 1;
    char name[] = "kvtier";
    char* argv[] = {name, nullptr};
    sg4::Engine engine(&argc, argv);
    configure_flow_model(engine);
    Platform platform(parse_hardware(load_config("h100-sxm", "configs/hardware")), 1);
    std::ostringstream csv;
    TransfersCsvWriter log(csv);
    nlohmann::json noted = nlohmann::json::object();
    sg4::Actor::create("offload", engine.host_by_name("dram"), [&] {
      StoreQueues stores(platform, &log);
      body(stores, platform, noted);
      stores.finish_in_flight();
    });
    engine.run();
    log.close();
    return nlohmann::json{{"csv", csv.str()}, {"noted", noted}};
  });
  std::istringstream csv(result["csv"].get<std::string>());
  return {rows_of(csv), result["noted"]};
}

void add_store(StoreQueues& stores, double bytes) {
  stores.add(Medium::kHbm, Medium::kDram, "hbm->dram", bytes, kCause);
}

TEST(StoreQueues, StoresOfOneCacheCallGoAsOneBatch) {
  const QueuesRun run = run_queues([](StoreQueues& stores, Platform&, nlohmann::json& noted) {
    for (double blocks : {1, 2, 3}) add_store(stores, blocks * kBlock);
    noted["started_while_queued"] = stores.transfers_started();
    stores.start_idle();
    noted["started"] = stores.transfers_started();
  });
  EXPECT_EQ(run.noted["started_while_queued"], 0);
  EXPECT_EQ(run.noted["started"], 1);  // one Comm: one batch, on the one GPU
  ASSERT_EQ(run.rows.size(), 3u);
  const double batch_s = kLatency + 6 * kBlock / kD2hBandwidth;
  for (size_t i = 0; i < run.rows.size(); ++i) {
    EXPECT_EQ(run.rows[i].bytes, static_cast<double>(i + 1) * kBlock);
    EXPECT_EQ(run.rows[i].start_s, 0);
    EXPECT_NEAR(run.rows[i].end_s, batch_s, 1e-9);
    EXPECT_EQ(run.rows[i].request, kCause);
  }
}

// A store added while its path moves a batch waits for that batch to land, and goes in the next.
TEST(StoreQueues, ABusyPathKeepsItsStoresQueuedForItsNextBatch) {
  const QueuesRun run = run_queues([](StoreQueues& stores, Platform&, nlohmann::json& noted) {
    add_store(stores, kBlock);
    stores.start_idle();
    add_store(stores, 2 * kBlock);
    stores.start_idle();
    noted["started"] = stores.transfers_started();
    for (const sg4::CommPtr& c : stores.in_flight()) c->wait();
    stores.pump();
  });
  EXPECT_EQ(run.noted["started"], 1);
  ASSERT_EQ(run.rows.size(), 2u);
  const double first_lands = kOneBlockAlone;
  EXPECT_EQ(run.rows[0].start_s, 0);
  EXPECT_NEAR(run.rows[0].end_s, first_lands, 1e-9);
  EXPECT_NEAR(run.rows[1].start_s, first_lands, 1e-9);
  EXPECT_NEAR(run.rows[1].end_s, first_lands + kLatency + 2 * kBlock / kD2hBandwidth, 1e-9);
}

// An instance ahead of SimGrid's clock defers a pump that would only log batches (serving_instance.h). Once
// the clock has caught up, a deferred pump finishes the batches that had landed by its time and no other:
// here a batch that shares PCIe with another copy of its size lands at twice the time it would alone, and
// a pump deferred between the two leaves it in flight.
TEST(StoreQueues, ADeferredPumpFinishesWhatHadLandedByItsTime) {
  const double shared = kLatency + 2 * kBlock / kD2hBandwidth;
  const QueuesRun run = run_queues([&](StoreQueues& stores, Platform& platform, nlohmann::json& noted) {
    add_store(stores, kBlock);
    stores.start_idle();
    platform.transfer(Medium::kHbm, Medium::kDram, kBlock);  // another copy on the same link
    noted["deferred_before_it_could_land"] = stores.defer_pump(kOneBlockAlone / 2);
    noted["unpumped_before_it_could_land"] = stores.landed_unpumped(Medium::kHbm, Medium::kDram);
    noted["deferred_before_it_landed"] = stores.defer_pump(kOneBlockAlone);
    noted["unpumped_before_it_landed"] = stores.landed_unpumped(Medium::kHbm, Medium::kDram);
    sg4::this_actor::sleep_until(2 * shared);
    stores.pump_deferred();
    noted["moving_after_early_pumps"] = stores.moving();
    noted["deferred_after_it_landed"] = stores.defer_pump(shared);
    stores.pump_deferred();
    noted["moving_after_late_pump"] = stores.moving();
  });
  EXPECT_TRUE(run.noted["deferred_before_it_could_land"].get<bool>());
  EXPECT_FALSE(run.noted["unpumped_before_it_could_land"].get<bool>());
  EXPECT_TRUE(run.noted["deferred_before_it_landed"].get<bool>());
  EXPECT_TRUE(run.noted["unpumped_before_it_landed"].get<bool>());
  EXPECT_TRUE(run.noted["moving_after_early_pumps"].get<bool>());
  EXPECT_TRUE(run.noted["deferred_after_it_landed"].get<bool>());
  EXPECT_FALSE(run.noted["moving_after_late_pump"].get<bool>());
  ASSERT_EQ(run.rows.size(), 1u);
  EXPECT_EQ(run.rows[0].start_s, 0);
  EXPECT_NEAR(run.rows[0].end_s, shared, 1e-9);
}

// A pump that would start a batch, stores queued behind one that could have landed, is not deferred.
TEST(StoreQueues, APumpThatWouldStartABatchIsNotDeferred) {
  const QueuesRun run = run_queues([&](StoreQueues& stores, Platform&, nlohmann::json& noted) {
    add_store(stores, kBlock);
    stores.start_idle();
    add_store(stores, kBlock);  // queued behind the batch in flight
    noted["deferred_before_it_could_land"] = stores.defer_pump(kOneBlockAlone / 2);
    noted["deferred_once_it_could_land"] = stores.defer_pump(kOneBlockAlone);
  });
  EXPECT_TRUE(run.noted["deferred_before_it_could_land"].get<bool>());
  EXPECT_FALSE(run.noted["deferred_once_it_could_land"].get<bool>());
}

// Deferred pumps are bounded: an instance may run on its own clock for many steps with a batch landed.
TEST(StoreQueues, DeferredPumpsAreBounded) {
  const QueuesRun run = run_queues([&](StoreQueues& stores, Platform&, nlohmann::json& noted) {
    add_store(stores, kBlock);
    stores.start_idle();
    int deferred = 0;
    while (deferred < 1000 && stores.defer_pump(deferred)) ++deferred;
    noted["deferred"] = deferred;
    sg4::this_actor::sleep_until(deferred);
    stores.pump_deferred();
    noted["moving"] = stores.moving();
    noted["deferred_after"] = stores.defer_pump(deferred);
  });
  EXPECT_GT(run.noted["deferred"].get<int>(), 1);
  EXPECT_LT(run.noted["deferred"].get<int>(), 1000);
  EXPECT_FALSE(run.noted["moving"].get<bool>());
  EXPECT_TRUE(run.noted["deferred_after"].get<bool>());
}

}  // namespace
}  // namespace kvtier
