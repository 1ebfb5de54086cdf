// A cluster's serving simulation: replicas of the scenario's instance behind a router (the scenario's
// `cluster:`), on one SimGrid engine.
//
// Replicas fill each node's GPUs in turn ("n0.", "n1.", ... name a node's hosts and links); each has its
// own scheduler, cache tiers and PCIe links, and the replicas of a node share its DRAM and NVMe links. The
// router is an actor of its own: it takes each request from the workload as it becomes ready, chooses a
// replica (sim/cluster/router.h, which follows each replica's cache through its events) and hands the
// request over at once. Completions go back to the workload, so a closed loop's next turn is routed
// afresh.
//
// The run's folder holds the cluster's requests.csv (every request, with the replica that served it in
// an `instance` column) and timeseries.csv (queues and HBM summed over replicas, every node's links), and
// its summary holds the totals beside `instances`: each replica's own summary. No transfers.csv yet, and
// no cost: both are per instance today.
#pragma once

#include <nlohmann/json.hpp>

#include "sim/engine/scenario.h"
#include "sim/engine/simulation.h"

namespace kvtier {

// REQUIRES: scenario.cluster is set. As simulate() (simulation.h), which calls it for a cluster.
nlohmann::json simulate_cluster(const Scenario& scenario, const SimulationOptions& options);

}  // namespace kvtier
