#include "sim/core/cost_file.h"

namespace kvtier {
namespace {

double price(const ConfigNode& node, std::string_view key) {
  double usd = node.number(key);
  if (usd < 0) node.child(key).fail("expected a price in US dollars, 0 or more");
  return usd;
}

double power(const ConfigNode& node, std::string_view key) {
  return node.quantity(key, UnitKind::kPower);
}

// A busy power and an idle one no higher.
void busy_and_idle(const ConfigNode& node, std::string_view busy_key, std::string_view idle_key, double& busy,
                   double& idle) {
  busy = power(node, busy_key);
  idle = power(node, idle_key);
  if (idle > busy) node.child(idle_key).fail("expected at most " + std::string(busy_key));
}

}  // namespace

CostFile parse_cost_file(const ConfigNode& root) {
  root.allow_keys({"name", "gpu", "host", "dram", "nvme"});
  CostFile c;
  c.name = root.string("name");
  ConfigNode gpu = root.child("gpu");
  gpu.allow_keys({"usd_per_hour", "busy_power", "idle_power"});
  c.gpu_usd_per_hour = price(gpu, "usd_per_hour");
  busy_and_idle(gpu, "busy_power", "idle_power", c.gpu_busy_w, c.gpu_idle_w);
  ConfigNode host = root.child("host");
  host.allow_keys({"power"});
  c.host_w = power(host, "power");
  ConfigNode dram = root.child("dram");
  dram.allow_keys({"usd_per_gb_month", "power_per_tb"});
  c.dram_usd_per_gb_month = price(dram, "usd_per_gb_month");
  c.dram_w_per_tb = power(dram, "power_per_tb");
  ConfigNode nvme = root.child("nvme");
  nvme.allow_keys({"usd_per_gb_month", "drive_active_power", "drive_idle_power"});
  c.nvme_usd_per_gb_month = price(nvme, "usd_per_gb_month");
  busy_and_idle(nvme, "drive_active_power", "drive_idle_power", c.nvme_active_w, c.nvme_idle_w);
  return c;
}

}  // namespace kvtier
