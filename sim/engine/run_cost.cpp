#include "sim/engine/run_cost.h"

#include <algorithm>

namespace kvtier {
namespace {

constexpr double kHoursPerMonth = 730;  // 365 × 24 / 12

// A cluster's replicas each bring the instance's GPUs and tiers; its pool lives in DRAM or NVMe, on the
// serving nodes or on pool nodes of its own.
double replicas(const Scenario& s) {
  return s.cluster ? s.cluster->instances : 1;
}

double tier_bytes(const Scenario& s, Medium medium) {
  double bytes = 0;
  for (const TierSpec& tier : s.tiers) {
    if (tier.medium == medium) bytes += static_cast<double>(tier.capacity_bytes);
  }
  bytes *= replicas(s);
  if (s.cluster && s.cluster->pool && medium == s.cluster->pool_medium)
    bytes += static_cast<double>(s.cluster->pool->capacity_bytes);
  return bytes;
}

bool has_tier(const Scenario& s, Medium medium) {
  return std::any_of(s.tiers.begin(), s.tiers.end(), [&](const TierSpec& t) { return t.medium == medium; });
}

// The nodes whose drives are in use: the serving nodes when the replicas have an NVMe tier or the pool is
// on their NVMe, and the pool nodes when it is on theirs.
double nvme_nodes(const Scenario& s) {
  const bool pool_on_nvme = s.cluster && s.cluster->pool && s.cluster->pool_medium == Medium::kNvme;
  double nodes = 0;
  if (has_tier(s, Medium::kNvme) || (pool_on_nvme && s.cluster->pool_nodes == 0))
    nodes += s.cluster ? s.cluster->nodes() : 1;
  if (pool_on_nvme) nodes += s.cluster->pool_nodes;
  return nodes;
}

double pool_nodes(const Scenario& s) {
  return s.cluster && s.cluster->pool ? s.cluster->pool_nodes : 0;
}

struct HourlyPrice {
  double gpu = 0, dram = 0, nvme = 0;
  double total() const { return gpu + dram + nvme; }
};

HourlyPrice hourly_price(const Scenario& s, const CostFile& c) {
  return {replicas(s) * s.gpus * c.gpu_usd_per_hour,
          tier_bytes(s, Medium::kDram) / 1e9 * c.dram_usd_per_gb_month / kHoursPerMonth,
          tier_bytes(s, Medium::kNvme) / 1e9 * c.nvme_usd_per_gb_month / kHoursPerMonth};
}

double busy_share(double busy_s, double window_s) {
  return window_s > 0 ? std::clamp(busy_s / window_s, 0.0, 1.0) : 0;
}

struct Energy {
  double gpu = 0, host = 0, dram = 0, nvme = 0;
  double total() const { return gpu + host + dram + nvme; }
};

Energy energy(const Scenario& s, const CostFile& c, const RunUsage& u) {
  const double w = u.window_s;
  const double gpus = replicas(s) * s.gpus;
  Energy e;
  e.gpu =
      gpus * (c.gpu_idle_w + (c.gpu_busy_w - c.gpu_idle_w) * busy_share(u.gpu_busy_s / replicas(s), w)) * w;
  e.host = c.host_w * gpus / s.hardware.gpu.count * w + c.host_w * pool_nodes(s) * w;
  e.dram = c.dram_w_per_tb * tier_bytes(s, Medium::kDram) / 1e12 * w;
  if (const double nodes = nvme_nodes(s); nodes > 0) {
    const NvmeSpec& nvme = s.hardware.nvme;
    const double busy_s =
        (u.nvme_read_bytes / nvme.node_read_bandwidth() + u.nvme_write_bytes / nvme.node_write_bandwidth()) /
        nodes;
    e.nvme =
        nodes * nvme.drives * (c.nvme_idle_w + (c.nvme_active_w - c.nvme_idle_w) * busy_share(busy_s, w)) * w;
  }
  return e;
}

nlohmann::json per_token(double amount, int64_t tokens, double scale) {
  if (tokens <= 0) return nullptr;
  return amount / static_cast<double>(tokens) * scale;
}

}  // namespace

double usd_per_hour(const Scenario& scenario, const CostFile& cost) {
  return hourly_price(scenario, cost).total();
}

nlohmann::json run_cost_json(const Scenario& s, const CostFile& c, const RunUsage& u) {
  const HourlyPrice price = hourly_price(s, c);
  const double hours = u.window_s / 3600;
  const Energy e = energy(s, c, u);
  const double usd = price.total() * hours;
  return {
      {"file", c.name},
      {"window_s", u.window_s},
      {"usd_per_hour", price.total()},
      {"usd", usd},
      {"usd_by_component",
       {{"gpu", price.gpu * hours}, {"dram", price.dram * hours}, {"nvme", price.nvme * hours}}},
      {"usd_per_million_tokens_in_slo", per_token(usd, u.tokens_in_slo, 1e6)},
      {"gpu_busy_share", busy_share(u.gpu_busy_s / replicas(s), u.window_s)},
      {"energy_j", e.total()},
      {"energy_j_by_component", {{"gpu", e.gpu}, {"host", e.host}, {"dram", e.dram}, {"nvme", e.nvme}}},
      {"mean_power_w", u.window_s > 0 ? e.total() / u.window_s : 0},
      {"tokens_per_joule", e.total() > 0 ? nlohmann::json(static_cast<double>(u.tokens_in_window) / e.total())
                                         : nlohmann::json(nullptr)}};
}

nlohmann::json sessions_fit_json(const Scenario& s) {
  nlohmann::json tiers = nlohmann::json::array();
  for (const TierSpec& tier : s.tiers) {
    const int64_t blocks_per_session = (s.session_tokens + tier.block_tokens - 1) / tier.block_tokens;
    tiers.push_back({{"tier", tier.name},
                     {"session_tokens", s.session_tokens},
                     {"bytes_per_session", blocks_per_session * tier.bytes_per_block()},
                     {"sessions", tier.capacity_blocks() / blocks_per_session}});
  }
  return tiers;
}

}  // namespace kvtier
