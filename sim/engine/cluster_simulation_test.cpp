// A cluster's simulation against independent expectations: a cluster of one is the lone instance, each
// replica with free transfers serves exactly as its share of the trace served alone, totals are the sums of
// the replicas, and prefix-aware routing keeps a conversation's prefixes where they are cached.
#include "sim/engine/cluster_simulation.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "sim/core/config_error_test_support.h"
#include "sim/core/config_files.h"
#include "sim/core/cost_file.h"
#include "sim/engine/isolated_run.h"
#include "sim/workload/trace_reader.h"
#include "sim/workload/trace_stats.h"

namespace kvtier {
namespace {

namespace fs = std::filesystem;

const char kTrace[] = "traces/mooncake-conversation-first2000.jsonl";

// Llama-3.1-8B on H100s, one GPU an instance, HBM and 64 GiB of DRAM; the Mooncake sample's first
// `seconds`, open loop.
std::string scenario_text(const std::string& cluster, const std::string& trace = kTrace, int seconds = 120) {
  return "name: t\nmodel: llama-3.1-8b\nhardware: h100-sxm\ninstance: {gpus: 1}\n"
         "cache:\n  block_tokens: 512\n  tiers:\n    - {medium: hbm, kv: bf16}\n"
         "    - {medium: dram, kv: bf16, capacity: 64GiB}\n"
         "workload: {loop: open, source: trace, format: mooncake, trace: " +
         trace + ", duration: " + std::to_string(seconds) + "s}\n" + cluster;
}

Scenario scenario(const std::string& text) {
  return parse_scenario(ConfigNode::load_string(text, "test.yaml"));
}

nlohmann::json run(const Scenario& s, const std::string& out = "", bool free_transfers = false) {
  SimulationOptions options;
  options.out_dir = out;
  options.free_transfers = free_transfers;
  return run_isolated([&] { return simulate(s, options); });
}

using Row = std::map<std::string, std::string>;

std::vector<Row> read_csv(const fs::path& path) {
  std::ifstream in(path);
  std::vector<std::string> header;
  std::vector<Row> rows;
  std::string line;
  auto cells = [](const std::string& text) {
    std::vector<std::string> out;
    std::stringstream s(text);
    for (std::string c; std::getline(s, c, ',');) out.push_back(c);
    return out;
  };
  std::getline(in, line);
  header = cells(line);
  while (std::getline(in, line)) {
    std::vector<std::string> c = cells(line);
    Row row;
    for (size_t i = 0; i < header.size(); ++i) row[header[i]] = i < c.size() ? c[i] : "";
    rows.push_back(std::move(row));
  }
  return rows;
}

// Rows in the order of their id.
std::vector<Row> by_id(std::vector<Row> rows) {
  std::sort(rows.begin(), rows.end(),
            [](const Row& a, const Row& b) { return std::stoll(a.at("id")) < std::stoll(b.at("id")); });
  return rows;
}

// Bytes per link, by name, from a summary.
std::map<std::string, double> link_bytes(const nlohmann::json& summary) {
  std::map<std::string, double> out;
  for (const auto& link : summary["link_bytes"])
    out[link["link"].get<std::string>()] = link["bytes"].get<double>();
  return out;
}

TEST(Cluster, OfOneInstanceServesAsTheLoneInstance) {
  const fs::path dir = fs::temp_directory_path() / "cluster-of-one";
  fs::remove_all(dir);
  nlohmann::json lone = run(scenario(scenario_text("")), (dir / "lone").string());
  nlohmann::json one = run(scenario(scenario_text("cluster: {instances: 1}\n")), (dir / "one").string());
  std::vector<Row> a = by_id(read_csv(dir / "lone" / "requests.csv"));
  std::vector<Row> b = by_id(read_csv(dir / "one" / "requests.csv"));
  ASSERT_EQ(a.size(), b.size());
  ASSERT_GT(a.size(), 100u);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(b[i].at("instance"), "0");
    b[i].erase("instance");
    ASSERT_EQ(a[i], b[i]) << "request " << a[i].at("id");
  }
  for (const char* key : {"requests_completed", "ttft_s", "hit_rate_tokens", "simulated_s", "events"})
    EXPECT_EQ(lone[key], one[key]) << key;
  // The cluster names its node's links "n0.": the lone instance's, and the seven other GPUs' PCIe.
  const std::map<std::string, double> bytes = link_bytes(one);
  for (const auto& link : lone["link_bytes"])
    EXPECT_EQ(bytes.at("n0." + link["link"].get<std::string>()), link["bytes"].get<double>());
  // Its replica's transfers.csv is the lone instance's, byte for byte.
  auto text = [](const fs::path& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string transfers = text(dir / "lone" / "transfers.csv");
  EXPECT_GT(std::count(transfers.begin(), transfers.end(), '\n'), 1000);
  EXPECT_EQ(text(dir / "one" / "transfers" / "instance-0.csv"), transfers);
}

// With free transfers nothing is shared between replicas, so each serves what the router sent it exactly
// as a lone instance serves that share of the trace: the same hits and the same times, request by request.
TEST(Cluster, EachReplicaWithFreeTransfersServesAsItsShareServedAlone) {
  const fs::path dir = fs::temp_directory_path() / "cluster-shares";
  fs::remove_all(dir);
  fs::create_directories(dir);
  run(scenario(scenario_text("cluster: {instances: 3, router: {policy: prefix_aware}}\n")),
      (dir / "cluster").string(), true);
  std::vector<Row> routed = by_id(read_csv(dir / "cluster" / "requests.csv"));
  std::ifstream trace(kTrace);
  std::vector<std::string> lines;
  for (std::string line; lines.size() < routed.size() && std::getline(trace, line);) lines.push_back(line);
  std::map<int, std::vector<Row>> served;
  for (int k = 0; k < 3; ++k) {
    const fs::path share = dir / ("share" + std::to_string(k) + ".jsonl");
    std::ofstream out(share);
    for (size_t i = 0; i < routed.size(); ++i) {
      if (routed[i].at("instance") == std::to_string(k)) out << lines[i] << "\n";
    }
    out.close();
    const fs::path alone = dir / ("alone" + std::to_string(k));
    run(scenario(scenario_text("", share.string())), alone.string(), true);
    served[k] = by_id(read_csv(alone / "requests.csv"));
  }
  std::map<int, size_t> next;
  for (const Row& r : routed) {
    const int k = std::stoi(r.at("instance"));
    const Row& alone = served[k].at(next[k]++);
    for (const char* column : {"hit_tokens_hbm", "hit_tokens_dram", "first_token_s", "completion_s"})
      ASSERT_EQ(r.at(column), alone.at(column))
          << "request " << r.at("id") << " on instance " << k << ": " << column;
  }
  for (int k = 0; k < 3; ++k) EXPECT_EQ(next[k], served[k].size()) << "instance " << k;  // all of each share
  EXPECT_GT(served[0].size(), 10u);
  EXPECT_GT(served[1].size(), 10u);
  EXPECT_GT(served[2].size(), 10u);
}

TEST(Cluster, TotalsAreTheSumsOfTheReplicas) {
  nlohmann::json s =
      run(scenario(scenario_text("cluster: {instances: 10, router: {policy: least_loaded}}\n")));
  ASSERT_EQ(s["instances"].size(), 10u);
  EXPECT_EQ(s["deployment"]["nodes"], 2);  // 8 GPUs a node
  int64_t issued = 0, completed = 0, steps = 0;
  std::map<std::string, double> bytes;
  for (const auto& one : s["instances"]) {
    issued += one["requests_issued"].get<int64_t>();
    completed += one["requests_completed"].get<int64_t>();
    steps += one["engine_steps"].get<int64_t>();
    for (const auto& link : one["link_bytes"])
      bytes[link["link"].get<std::string>()] += link["bytes"].get<double>();
  }
  EXPECT_EQ(issued, s["requests_issued"].get<int64_t>());
  EXPECT_EQ(completed, s["requests_completed"].get<int64_t>());
  EXPECT_EQ(steps, s["engine_steps"].get<int64_t>());
  ASSERT_EQ(s["link_bytes"].size(), bytes.size());
  for (const auto& link : s["link_bytes"]) {
    const std::string name = link["link"].get<std::string>();
    EXPECT_DOUBLE_EQ(bytes.at(name), link["bytes"].get<double>()) << name;
  }
  EXPECT_GT(bytes.at("n1.pcie_d2h_1"), 0);  // instance 9 is node 1's second
}

// Mooncake's conversation turns repeat their earlier prefix: routed round-robin, a conversation's turns
// land on instances that never saw its prefix; routed by cached prefix, they follow it.
TEST(Cluster, PrefixAwareRoutingHitsMoreThanRoundRobin) {
  auto hit_rate = [](const std::string& policy) {
    nlohmann::json s = run(
        scenario(scenario_text("cluster: {instances: 8, router: {policy: " + policy + "}}\n", kTrace, 300)));
    return s["hit_rate_total"].get<double>();
  };
  const double round_robin = hit_rate("round_robin");
  const double prefix_aware = hit_rate("prefix_aware");
  EXPECT_GT(prefix_aware, 1.5 * round_robin) << prefix_aware << " against " << round_robin;
}

// A router that sees the caches a minute late sends a conversation's next turn by what was cached a minute
// ago: it loses the turns that follow within the minute.
TEST(Cluster, AStaleCacheViewCostsThePrefixAwareRouterHits) {
  auto hit_rate = [](const std::string& staleness) {
    nlohmann::json s = run(scenario(scenario_text(
        "cluster: {instances: 8, router: {policy: prefix_aware, staleness: " + staleness + "}}\n", kTrace,
        300)));
    return s["hit_rate_total"].get<double>();
  };
  const double fresh = hit_rate("0s");
  const double stale = hit_rate("60s");
  EXPECT_LT(stale, 0.9 * fresh) << stale << " against " << fresh;
}

// The pool is striped over both nodes: of every block it loads or stores, the half on the other node
// crosses the network, once out of one NIC and once into another.
TEST(ClusterPool, TheNetworkCarriesTheRemoteHalfOfThePoolsBlocks) {
  nlohmann::json s =
      run(scenario(scenario_text("cluster: {instances: 16, pool: {kv: int4, capacity: 10GiB}}\n")));
  ASSERT_EQ(s["deployment"]["nodes"], 2);
  const nlohmann::json& pool = s["pool"];
  ASSERT_GT(pool["hit_blocks"].get<int64_t>(), 0);
  ASSERT_GT(pool["evicted_blocks"].get<int64_t>(), 0);  // 10 GiB is less than the blocks of two minutes
  const double moved =
      static_cast<double>(pool["hit_blocks"].get<int64_t>() + pool["stored_blocks"].get<int64_t>()) *
      pool["bytes_per_block"].get<double>();
  const std::map<std::string, double> bytes = link_bytes(s);
  EXPECT_NEAR(bytes.at("n0.nic_out") + bytes.at("n1.nic_out"), moved / 2, 1e-9 * moved);
  EXPECT_NEAR(bytes.at("n0.nic_in") + bytes.at("n1.nic_in"), moved / 2, 1e-9 * moved);
  EXPECT_EQ(s["requests_completed"], s["requests_issued"]);
  EXPECT_GT(s["hit_rate_tokens"][2]["tokens"].get<int64_t>(), 0);  // the pool's column
  EXPECT_EQ(s["hit_rate_tokens"][2]["tier"], "pool");
}

// With every block kept and transfers free, whichever replica a turn lands on finds its prefix in the
// pool: the cluster's hits come to the trace's own bound, the prefix hit rate of an infinite cache
// (`kvtier trace stats`), where round-robin over private tiers keeps less than half of it.
TEST(ClusterPool, AnUnboundedPoolReachesTheTracesPrefixHitRate) {
  std::unique_ptr<RequestStream> trace = open_trace(kTrace, TraceReadOptions{});
  const double bound = compute_trace_stats(*trace).token_hit_rate();
  auto hit_rate = [](const std::string& pool) {
    nlohmann::json s =
        run(scenario(scenario_text("cluster: {instances: 8" + pool + "}\nallow_oversubscribe: true\n", kTrace,
                                   700)),
            "", true);
    return s["hit_rate_total"].get<double>();
  };
  const double private_tiers = hit_rate("");
  const double pooled = hit_rate(", pool: {kv: bf16, capacity: 100TiB}");
  EXPECT_LT(private_tiers, 0.5 * bound);
  EXPECT_NEAR(pooled, bound, 1e-4);
}

// Two nodes on two leaves: every share of the pool between them crosses both leaves' uplinks, so the
// uplinks carry what the NICs do. A spine as fast as the NICs, with no latency, changes nothing (one node a
// leaf: an uplink is shared as the node's NIC is); a slow one makes the pool's loads wait.
TEST(ClusterPool, BetweenLeavesTheSpineCarriesWhatTheNicsDo) {
  auto run_with = [](const std::string& network) {
    return run(scenario(
        scenario_text("cluster: {instances: 16, pool: {kv: bf16, capacity: 200GiB}" + network + "}\n")));
  };
  const nlohmann::json one_switch = run_with("");
  const std::string leaves = ", network: {topology: leaf_spine, nodes_per_leaf: 1, uplink_bandwidth: ";
  const nlohmann::json spine = run_with(leaves + "400GB/s}");
  std::map<std::string, double> b = link_bytes(spine);
  ASSERT_GT(b.at("n0.nic_out"), 0);
  EXPECT_DOUBLE_EQ(b.at("leaf0.up") + b.at("leaf1.up"), b.at("n0.nic_out") + b.at("n1.nic_out"));
  EXPECT_DOUBLE_EQ(b.at("leaf0.down") + b.at("leaf1.down"), b.at("n0.nic_in") + b.at("n1.nic_in"));
  EXPECT_EQ(spine["ttft_s"], one_switch["ttft_s"]);
  EXPECT_EQ(link_bytes(one_switch).at("n0.nic_out"), b.at("n0.nic_out"));
  const nlohmann::json slow = run_with(leaves + "5GB/s}");
  EXPECT_GT(slow["ttft_parts_s"]["load_pool"].get<double>(), 2 * spine["ttft_parts_s"]["load_pool"].get<double>());
}

// On pool nodes of its own every share of the pool crosses the network: the pool nodes' NICs carry every
// block it stored in and every block it loaded out, and the serving nodes' NICs in carry the loads.
TEST(ClusterPool, OnPoolNodesEveryShareCrossesTheNetwork) {
  nlohmann::json s =
      run(scenario(scenario_text("cluster: {instances: 16, pool: {kv: int4, capacity: 10GiB, nodes: 2}}\n")));
  const nlohmann::json& pool = s["pool"];
  ASSERT_GT(pool["hit_blocks"].get<int64_t>(), 0);
  const double block = pool["bytes_per_block"].get<double>();
  const double loaded = static_cast<double>(pool["hit_blocks"].get<int64_t>()) * block;
  const double stored = static_cast<double>(pool["stored_blocks"].get<int64_t>()) * block;
  const std::map<std::string, double> b = link_bytes(s);
  EXPECT_NEAR(b.at("p0.nic_out") + b.at("p1.nic_out"), loaded, 1e-9 * loaded);
  EXPECT_NEAR(b.at("p0.nic_in") + b.at("p1.nic_in"), stored, 1e-9 * stored);
  EXPECT_NEAR(b.at("n0.nic_in") + b.at("n1.nic_in"), loaded, 1e-9 * loaded);
  EXPECT_NEAR(b.at("p0.dram") + b.at("p1.dram"), loaded + stored, 1e-9 * (loaded + stored));
  EXPECT_EQ(s["requests_completed"], s["requests_issued"]);
}

// On a pool node's NVMe, its drives read every block the pool loaded and write every block it stored.
TEST(ClusterPool, OnNvmeThePoolNodesDrivesCarryItsBlocks) {
  nlohmann::json s = run(scenario(scenario_text(
      "cluster: {instances: 16, pool: {kv: bf16, capacity: 10GiB, nodes: 1, medium: nvme}}\n")));
  const nlohmann::json& pool = s["pool"];
  ASSERT_GT(pool["hit_blocks"].get<int64_t>(), 0);
  const double block = pool["bytes_per_block"].get<double>();
  const std::map<std::string, double> b = link_bytes(s);
  EXPECT_DOUBLE_EQ(b.at("p0.nvme_read"), static_cast<double>(pool["hit_blocks"].get<int64_t>()) * block);
  EXPECT_DOUBLE_EQ(b.at("p0.nvme_write"), static_cast<double>(pool["stored_blocks"].get<int64_t>()) * block);
  EXPECT_EQ(b.at("n0.nvme_read"), 0);
}

// A cluster is charged for every replica's GPUs and tiers, and its pool as DRAM: four replicas and a 1 TiB
// pool cost four lone instances and 1,099.5 GB of DRAM an hour.
TEST(Cluster, CostsItsReplicasAndItsPool) {
  const std::string cost = "cost: h100-sxm\n";
  nlohmann::json lone = run(scenario(scenario_text(cost)));
  nlohmann::json one = run(scenario(scenario_text(cost + "cluster: {instances: 1}\n")));
  EXPECT_EQ(lone["cost"], one["cost"]);
  nlohmann::json four =
      run(scenario(scenario_text(cost + "cluster: {instances: 4, pool: {kv: bf16, capacity: 1TiB}}\n")));
  const CostFile prices = parse_cost_file(load_config("h100-sxm", "configs/costs"));
  const double pool_usd_per_hour = 1099.511627776 * prices.dram_usd_per_gb_month / 730;
  EXPECT_NEAR(four["cost"]["usd_per_hour"].get<double>(),
              4 * lone["cost"]["usd_per_hour"].get<double>() + pool_usd_per_hour, 1e-9);
  const double busy = four["gpu_busy_s"].get<double>() / 4 / four["window_s"].get<double>();
  EXPECT_DOUBLE_EQ(four["cost"]["gpu_busy_share"].get<double>(), busy);
  // On a pool node's NVMe, the pool is charged as NVMe.
  nlohmann::json on_nvme = run(scenario(scenario_text(
      cost + "cluster: {instances: 4, pool: {kv: bf16, capacity: 1TiB, nodes: 1, medium: nvme}}\n")));
  EXPECT_NEAR(
      on_nvme["cost"]["usd_per_hour"].get<double>(),
      4 * lone["cost"]["usd_per_hour"].get<double>() + 1099.511627776 * prices.nvme_usd_per_gb_month / 730,
      1e-9);
}

TEST(Cluster, BadClustersFailAtTheirKey) {
  auto error = [](const std::string& cluster, const std::string& dram = "64GiB") {
    std::string text = scenario_text(cluster);
    text.replace(text.find("64GiB"), 5, dram);
    return testing::error_of([&] { scenario(text); });
  };
  EXPECT_EQ(error("cluster: {instances: 0}\n"),
            "test.yaml:11:22: cluster.instances: expected 1 to 4096 instances");
  EXPECT_NE(
      error("cluster: {instances: 2, router: {policy: random}}\n")
          .find("cluster.router.policy: expected round_robin, least_loaded, session_sticky or prefix_aware"),
      std::string::npos);
  EXPECT_EQ(error("cluster: {instances: 2, router: {staleness: -1s}}\n"),
            "test.yaml:11:45: cluster.router.staleness: expected a non-negative quantity, got '-1s'");
  // Eight replicas on a node of 2 TB of DRAM, each with a 300 GiB tier; two fit.
  EXPECT_NE(
      error("cluster: {instances: 8}\n", "300GiB")
          .find("cache.tiers[1].capacity: 8 instances' tiers of 300.0 GiB do not fit in the node's DRAM"),
      std::string::npos)
      << error("cluster: {instances: 8}\n", "300GiB");
  EXPECT_EQ(error("cluster: {instances: 2}\n", "300GiB"), "(no error)");
  // A pool of 3 TiB over one node, beside eight 64 GiB tiers: 3.5 TiB on a node of 2 TB.
  EXPECT_EQ(
      error("cluster: {instances: 8, pool: {kv: bf16, capacity: 3TiB}}\n"),
      "test.yaml:11:52: cluster.pool.capacity: the pool's share of each node (3.0 TiB), with the node's "
      "replicas' DRAM tiers, needs 3.5 TiB of DRAM, more than the 1.8 TiB of 8x H100 SXM (DGX H100 class); "
      "make it smaller, or set allow_oversubscribe: true (--allow-oversubscribe) to simulate it anyway");
  EXPECT_EQ(error("cluster: {instances: 16, pool: {kv: bf16, capacity: 2TiB}}\n"),
            "(no error)");  // 1 TiB a node
  std::string with_remote = scenario_text("cluster: {instances: 2, pool: {kv: bf16, capacity: 1TiB}}\n");
  with_remote.insert(with_remote.find("workload:"), "    - {medium: remote, kv: bf16, capacity: 1TiB}\n");
  EXPECT_NE(testing::error_of([&] { scenario(with_remote); })
                .find("cluster.pool: the instance already has a remote tier ('remote'); a cluster's pool "
                      "takes its place"),
            std::string::npos);
  // Two pool nodes of 1.8 TiB of DRAM hold 3 TiB; one does not.
  EXPECT_EQ(error("cluster: {instances: 8, pool: {kv: bf16, capacity: 3TiB, nodes: 2}}\n"), "(no error)");
  EXPECT_NE(error("cluster: {instances: 8, pool: {kv: bf16, capacity: 3TiB, nodes: 1}}\n")
                .find("cluster.pool.capacity: the pool's share of each node (3.0 TiB) needs 3.0 TiB of DRAM, "
                      "more than the 1.8 TiB of 8x H100 SXM (DGX H100 class)"),
            std::string::npos);
  EXPECT_NE(error("cluster: {instances: 8, pool: {kv: bf16, capacity: 1TiB, nodes: -1}}\n")
                .find("cluster.pool.nodes: expected 0 (the serving nodes) to 4096 pool nodes"),
            std::string::npos);
  EXPECT_EQ(error("cluster: {instances: 4, disaggregation: {prefill_instances: 4}}\n"),
            "test.yaml:11:61: cluster.disaggregation.prefill_instances: expected 1 to 3 of the cluster's 4 "
            "instances (the others decode)");
  EXPECT_NE(error("cluster: {instances: 4, disaggregation: {prefill_instances: 1, kv_transfer: lazy}}\n")
                .find("cluster.disaggregation.kv_transfer: expected whole or layerwise"),
            std::string::npos);
}

// Llama-3.1-8B's KV in bf16: 32 layers x 8 KV heads x 128 dimensions x K and V x 2 bytes a token.
constexpr double kLlama8bKvBytesPerToken = 32.0 * 8 * 128 * 2 * 2;

// A Mooncake trace of one request of `tokens` input tokens (whole 512-token blocks) at time 0.
fs::path one_request_trace(const std::string& name, int tokens) {
  const fs::path trace = fs::temp_directory_path() / name;
  std::ofstream out(trace);
  out << R"({"timestamp": 0, "input_length": )" << tokens << R"(, "output_length": 10, "hash_ids": [)";
  for (int b = 0; b < tokens / 512; ++b) out << (b > 0 ? ", " : "") << b;
  out << "]}\n";
  return trace;
}

// One request of 8,192 tokens (16 blocks) prefilled on instance 0 of node 0 and handed to the first
// decode instance, alone on the links: its KV, 8,192 x 131,072 bytes, crosses in latency + bytes over the
// narrowest link. With prefill_instances 8 of 9 the decode instance is on node 1: the sender's PCIe
// (55 GB/s, 2.8 us), both NICs (400 GB/s, 5 us each) and the receiver's PCIe. With 1 of 2 it is GPU 1 of
// node 0: NVLink, 450 GB/s each way, no latency. Layer-wise, the prefill's step (longer than the copy)
// hides all but the last of 32 layers.
TEST(ClusterDisaggregation, AHandoffAloneTakesLatencyPlusBytesOverTheNarrowestLink) {
  const fs::path trace = one_request_trace("one-request.jsonl", 8192);
  const double bytes = 8192 * kLlama8bKvBytesPerToken;
  auto handoff = [&](int instances, int prefill, const std::string& transfer) {
    const std::string cluster =
        "cluster: {instances: " + std::to_string(instances) +
        ", router: {policy: least_loaded}, disaggregation: {prefill_instances: " + std::to_string(prefill) +
        ", kv_transfer: " + transfer + "}}\n";
    nlohmann::json s = run(scenario(scenario_text(cluster, trace.string())));
    EXPECT_EQ(s["requests_completed"], 1);
    EXPECT_DOUBLE_EQ(s["handoff"]["bytes"].get<double>(), bytes);
    return s;
  };
  const double pcie = 2 * 2.8e-6, nics = 2 * 5e-6;
  nlohmann::json across = handoff(9, 8, "whole");
  EXPECT_NEAR(across["handoff"]["handoff_s"]["p50"].get<double>(), pcie + nics + bytes / 55e9, 1e-9);
  EXPECT_DOUBLE_EQ(link_bytes(across).at("n0.nic_out"), bytes);
  EXPECT_DOUBLE_EQ(link_bytes(across).at("n1.pcie_h2d_0"), bytes);
  nlohmann::json within = handoff(2, 1, "whole");
  EXPECT_NEAR(within["handoff"]["handoff_s"]["p50"].get<double>(), bytes / 450e9, 1e-9);
  EXPECT_DOUBLE_EQ(link_bytes(within).at("n0.peer_in_1"), bytes);
  nlohmann::json layerwise = handoff(9, 8, "layerwise");
  EXPECT_NEAR(layerwise["handoff"]["handoff_s"]["p50"].get<double>(), pcie + nics + bytes / 32 / 55e9, 1e-9);
  // The first token reaches the user with the KV: the prefill's TTFT plus the handoff.
  const nlohmann::json& prefill = across["instances"][0]["ttft_s"]["p50"];
  EXPECT_NEAR(across["ttft_s"]["p50"].get<double>(),
              prefill.get<double>() + across["handoff"]["handoff_s"]["p50"].get<double>(), 1e-9);
  fs::remove(trace);
}

// A prompt of 640K tokens, more KV than an H100 holds beside the weights, is rejected by its prefill
// replica: it leaves at once, its decode replica stops expecting it, and the run ends.
TEST(ClusterDisaggregation, ARequestItsPrefillRejectsLeavesTheCluster) {
  const fs::path trace = one_request_trace("too-long.jsonl", 655360);
  nlohmann::json s = run(scenario(
      scenario_text("cluster: {instances: 2, disaggregation: {prefill_instances: 1}}\n", trace.string())));
  EXPECT_EQ(s["requests_rejected"], 1);
  EXPECT_EQ(s["requests_completed"], 0);
  EXPECT_EQ(s["handoff"]["requests"], 0);
  fs::remove(trace);
}

// Conservation: with the prefill instances on node 0 and the decode instances on node 1, the NICs carry
// every request's prompt KV once, and nothing else; the router's decisions are in requests.csv.
TEST(ClusterDisaggregation, TheNicsCarryEveryPromptsKvOnce) {
  const fs::path dir = fs::temp_directory_path() / "cluster-disaggregated";
  fs::remove_all(dir);
  nlohmann::json s =
      run(scenario(scenario_text("cluster: {instances: 16, disaggregation: {prefill_instances: 8}}\n")),
          dir.string());
  const std::vector<Row> rows = read_csv(dir / "requests.csv");
  double prompts = 0;
  for (const Row& r : rows) {
    EXPECT_LT(std::stoi(r.at("prefill_instance")), 8);
    EXPECT_GE(std::stoi(r.at("instance")), 8);
    EXPECT_GE(std::stod(r.at("handoff_s")), 0);
    prompts += std::stod(r.at("input_tokens")) * kLlama8bKvBytesPerToken;
  }
  ASSERT_GT(rows.size(), 100u);
  EXPECT_EQ(s["requests_completed"], s["requests_issued"]);
  EXPECT_EQ(s["handoff"]["requests"].get<size_t>(), rows.size());
  const std::map<std::string, double> b = link_bytes(s);
  EXPECT_NEAR(b.at("n0.nic_out"), prompts, 1e-9 * prompts);
  EXPECT_NEAR(b.at("n1.nic_in"), prompts, 1e-9 * prompts);
  EXPECT_EQ(b.at("n1.nic_out"), 0);
  fs::remove_all(dir);
}

// The trade-off, under load (256 closed-loop agent sessions on 16 GPUs, two minutes): 12 decode instances
// that run no prefill chunk emit tokens faster, and 4 GPUs prefilling, with the KV to move, make the first
// token later. (With 8 and 8, decode batches twice as dense as the colocated ones' cost as much as the
// prefill chunks they are spared, this early in the run: TPOT is no better yet.)
TEST(ClusterDisaggregation, TradesTimeToFirstTokenForTimePerOutputToken) {
  auto run_with = [](const std::string& cluster) {
    std::string text = scenario_text(cluster);
    text.replace(
        text.find("workload:"), std::string::npos,
        "workload: {loop: closed, source: agent, agent: agent-default, sessions: 256, duration: 2min}\n" +
            cluster);
    return run(scenario(text));
  };
  nlohmann::json together = run_with("cluster: {instances: 16}\n");
  nlohmann::json apart = run_with("cluster: {instances: 16, disaggregation: {prefill_instances: 4}}\n");
  EXPECT_LT(apart["tpot_s"]["p50"].get<double>(), 0.8 * together["tpot_s"]["p50"].get<double>());
  EXPECT_GT(apart["ttft_s"]["p50"].get<double>(), together["ttft_s"]["p50"].get<double>());
  EXPECT_GT(apart["handoff"]["ttft_share"].get<double>(), 0);
}

}  // namespace
}  // namespace kvtier
