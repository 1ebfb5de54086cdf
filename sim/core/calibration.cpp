#include "sim/core/calibration.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <span>
#include <sstream>

#include "sim/core/json_text.h"

namespace kvtier {
namespace {

using nlohmann::json;

const char* const kBytesPerS = "_bytes_per_s";

// ---- hardware: one table drives both directions ----

enum class ValueKind { kFraction, kBandwidth, kDuration };

struct HardwareKey {
  const char* section;
  const char* key;
  std::optional<double> MeasuredHardware::*field;
  ValueKind kind;
};

constexpr HardwareKey kHardwareKeys[] = {
    {"gpu", "prefill_mfu", &MeasuredHardware::prefill_mfu, ValueKind::kFraction},
    {"gpu", "memory_bandwidth_efficiency", &MeasuredHardware::memory_bandwidth_efficiency,
     ValueKind::kFraction},
    {"pcie", "h2d_bandwidth", &MeasuredHardware::pcie_h2d_bandwidth, ValueKind::kBandwidth},
    {"pcie", "d2h_bandwidth", &MeasuredHardware::pcie_d2h_bandwidth, ValueKind::kBandwidth},
    {"pcie", "h2d_latency", &MeasuredHardware::pcie_h2d_latency, ValueKind::kDuration},
    {"pcie", "d2h_latency", &MeasuredHardware::pcie_d2h_latency, ValueKind::kDuration},
    {"nvme", "read_bandwidth", &MeasuredHardware::nvme_read_bandwidth, ValueKind::kBandwidth},
    {"nvme", "write_bandwidth", &MeasuredHardware::nvme_write_bandwidth, ValueKind::kBandwidth},
    {"nvme", "latency", &MeasuredHardware::nvme_latency, ValueKind::kDuration},
    {"nvme", "store_read_cpu_per_gb", &MeasuredHardware::nvme_store_read_cpu_per_gb, ValueKind::kDuration},
    {"nvme", "store_write_cpu_per_gb", &MeasuredHardware::nvme_store_write_cpu_per_gb, ValueKind::kDuration},
};
constexpr const char* kSections[] = {"gpu", "pcie", "nvme"};
// Files written before latencies were fitted per direction hold one pcie.latency for both.
constexpr const char* kSharedPcieLatency = "latency";

// A unit of a written quantity and the decimals it is written with.
struct WrittenUnit {
  double scale;
  const char* unit;
  int decimals;
};
constexpr WrittenUnit kBandwidthUnits[] = {{1e12, "TB/s", 3}, {1e9, "GB/s", 2}, {1e6, "MB/s", 1}};
constexpr WrittenUnit kDurationUnits[] = {{1e-3, "ms", 3}, {1e-6, "us", 2}};

std::string printf_string(const char* format, int decimals, double value, const char* unit) {
  const int size = std::snprintf(nullptr, 0, format, decimals, value, unit);
  std::string out(static_cast<size_t>(size) + 1, '\0');
  std::snprintf(out.data(), out.size(), format, decimals, value, unit);
  out.pop_back();
  return out;
}

// "54.93GB/s", "2.71us": the largest unit in which the value, rounded, is at least 1; below the smallest,
// four significant digits in the smallest ("0.0125us"), so that no value is written as 0.
std::string rounded_string(double value, std::span<const WrittenUnit> units) {
  for (const WrittenUnit& u : units) {
    std::string text = printf_string("%.*f%s", u.decimals, value / u.scale, u.unit);
    if (std::strtod(text.c_str(), nullptr) >= 1) return text;
  }
  return printf_string("%.*g%s", 4, value / units.back().scale, units.back().unit);
}

// What the file holds for a value: rounded once, and written as that rounded value reads back, so that
// writing a file that was read gives the same text (rounding near a unit's edge can change the unit:
// 999.996GB/s is 1000.00GB/s in GB/s, written 1.000TB/s).
std::string quantity_string(double value, std::span<const WrittenUnit> units, UnitKind kind) {
  return rounded_string(parse_quantity(rounded_string(value, units), kind), units);
}

std::string bandwidth_string(double bytes_per_s) {
  return quantity_string(bytes_per_s, kBandwidthUnits, UnitKind::kBandwidth);
}

std::string duration_string(double seconds) {
  return quantity_string(seconds, kDurationUnits, UnitKind::kDuration);
}

json value_json(double value, ValueKind kind) {
  if (kind == ValueKind::kBandwidth) return bandwidth_string(value);
  if (kind == ValueKind::kDuration) return duration_string(value);
  return value;
}

// ---- reading, with the key path kept for the error ----

[[noreturn]] void fail(const std::vector<std::string>& keys, const std::string& detail) {
  throw CalibrationKeyError(keys, detail);
}

std::vector<std::string> child_keys(std::vector<std::string> keys, const std::string& key) {
  keys.push_back(key);
  return keys;
}

void expect_object(const json& value, const std::vector<std::string>& keys) {
  if (!value.is_object()) fail(keys, "expected an object, got " + std::string(value.type_name()));
}

void allow_keys(const json& object, const std::vector<std::string>& keys,
                const std::vector<std::string>& known) {
  for (const auto& [key, value] : object.items()) {
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    std::string hint = closest_match(key, known);
    fail(child_keys(keys, key),
         "unknown key '" + key + "'" + (hint.empty() ? "" : " (did you mean '" + hint + "'?)"));
  }
}

std::string optional_string(const json& object, const std::string& key) {
  if (!object.contains(key)) return "";
  const json& value = object.at(key);
  if (!value.is_string()) fail({key}, "expected a string, got " + std::string(value.type_name()));
  return value.get<std::string>();
}

double read_value(const json& value, const std::vector<std::string>& keys, ValueKind kind) {
  if (kind == ValueKind::kFraction) {
    if (!value.is_number()) fail(keys, "expected a number, got " + std::string(value.type_name()));
    double fraction = value.get<double>();
    if (!(fraction > 0 && fraction <= 1)) fail(keys, "expected a fraction in (0, 1]");
    return fraction;
  }
  UnitKind unit = kind == ValueKind::kBandwidth ? UnitKind::kBandwidth : UnitKind::kDuration;
  if (!value.is_string()) {
    fail(keys, "expected " + std::string(unit_example(unit)) + ", got " + std::string(value.type_name()));
  }
  double quantity = 0;
  try {
    quantity = parse_quantity(value.get<std::string>(), unit);
  } catch (const UnitError& e) {
    fail(keys, e.what());
  }
  if (kind == ValueKind::kBandwidth && !(quantity > 0)) fail(keys, "expected a positive bandwidth");
  if (kind == ValueKind::kDuration && !(quantity >= 0)) fail(keys, "expected a duration of 0 or more");
  return quantity;
}

MeasuredHardware read_hardware(const json& hardware) {
  const std::vector<std::string> root = {"hardware"};
  expect_object(hardware, root);
  allow_keys(hardware, root, {std::begin(kSections), std::end(kSections)});
  MeasuredHardware measured;
  for (const char* section : kSections) {
    if (!hardware.contains(section)) continue;
    const json& values = hardware.at(section);
    const std::vector<std::string> keys = child_keys(root, section);
    expect_object(values, keys);
    std::vector<std::string> known;
    for (const HardwareKey& k : kHardwareKeys) {
      if (k.section != std::string_view(section)) continue;
      known.push_back(k.key);
      if (values.contains(k.key))
        measured.*k.field = read_value(values.at(k.key), child_keys(keys, k.key), k.kind);
    }
    if (section == std::string_view("pcie")) known.push_back(kSharedPcieLatency);
    allow_keys(values, keys, known);
  }
  if (hardware.contains("pcie") && hardware.at("pcie").contains(kSharedPcieLatency)) {
    double latency = read_value(hardware.at("pcie").at(kSharedPcieLatency),
                                {"hardware", "pcie", kSharedPcieLatency}, ValueKind::kDuration);
    if (!measured.pcie_h2d_latency) measured.pcie_h2d_latency = latency;
    if (!measured.pcie_d2h_latency) measured.pcie_d2h_latency = latency;
  }
  return measured;
}

// ---- kernels: "<gather|scatter>_bytes_per_s", "<quantize|dequantize>_<encoding>_bytes_per_s" ----

std::string conversion_prefix(Conversion conversion) {
  return conversion == Conversion::kQuantize ? "quantize_" : "dequantize_";
}

// The inverse of kernel_encoding_name.
std::optional<Encoding> kernel_encoding(const std::string& name) {
  std::optional<Encoding> encoding;
  if (name == "fp8") encoding = Encoding::of_kind(EncodingKind::kFp8);
  if (name == "turboquant4") encoding = Encoding::of_kind(EncodingKind::kTurboQuant4);
  const std::string int4 = "int4_g";
  const std::string digits = name.starts_with(int4) ? name.substr(int4.size()) : "";
  if (!digits.empty() && digits.size() <= 4 &&
      std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c) != 0; })) {
    encoding = Encoding::int4(std::stoi(digits));
  }
  if (encoding && kernel_encoding_name(*encoding) != name) return std::nullopt;  // "int4_g032", "int4_g0"
  return encoding;
}

std::vector<std::string> example_kernel_keys() {
  std::vector<std::string> keys = {std::string("gather") + kBytesPerS, std::string("scatter") + kBytesPerS};
  for (const char* encoding : {"turboquant4", "int4_g32", "int4_g128", "fp8"}) {
    for (Conversion c : {Conversion::kQuantize, Conversion::kDequantize})
      keys.push_back(conversion_prefix(c) + encoding + kBytesPerS);
  }
  return keys;
}

KernelRates read_kernels(const json& kernels) {
  expect_object(kernels, {"kernels"});
  KernelRates rates;
  for (const auto& [key, value] : kernels.items()) {
    if (!value.is_number() || !(value.get<double>() > 0))
      fail({"kernels", key}, "expected a positive rate in bytes per second");
    if (!key.ends_with(kBytesPerS))
      fail({"kernels", key}, "expected a key ending in " + std::string(kBytesPerS));
    add_kernel_rate(rates, key.substr(0, key.size() - std::string(kBytesPerS).size()), value.get<double>());
  }
  return rates;
}

json kernels_json(const KernelRates& kernels) {
  json out = json::object();
  if (kernels.gather_bytes_per_s) out[std::string("gather") + kBytesPerS] = *kernels.gather_bytes_per_s;
  if (kernels.scatter_bytes_per_s) out[std::string("scatter") + kBytesPerS] = *kernels.scatter_bytes_per_s;
  for (const ConversionRate& rate : kernels.conversions) {
    std::optional<std::string> name = kernel_encoding_name(rate.encoding);
    if (!name) throw std::invalid_argument("no kernel name for KV encoding " + rate.encoding.name());
    out[conversion_prefix(rate.conversion) + *name + kBytesPerS] = rate.bytes_per_s;
  }
  return out;
}

// ---- serving: the step costs, numbers at full precision so that stored predictions reproduce ----

struct ServingKey {
  const char* key;
  double StepCosts::*field;
  bool zero_allowed;
  bool formula_attention;  // unused, so optional and possibly 0, when `attention` prices attention
};

constexpr ServingKey kServingKeys[] = {
    {"step_overhead_s", &StepCosts::step_overhead_s, true, false},
    {"linear_mfu", &StepCosts::linear_mfu, false, false},
    {"attention_mfu", &StepCosts::attention_mfu, false, true},
    {"attention_half_rate_keys", &StepCosts::attention_half_rate_keys, true, true},
    {"attention_half_rate_queries", &StepCosts::attention_half_rate_queries, true, true},
    {"attention_bandwidth_efficiency", &StepCosts::attention_bandwidth_efficiency, false, true},
};
constexpr const char* kServingModel = "model";
constexpr const char* kServingAttention = "attention";
// PowerThrottle: {"onset_s", "slowdown"} and optionally "attention_slowdown".
constexpr const char* kServingPower = "power";

// serving.attention: the kernel's tiling (counts) and each kernel's fitted times (seconds), each a key
// and the member it holds.
template <typename Owner, typename Value>
struct FieldKey {
  const char* key;
  Value Owner::*field;
};
constexpr FieldKey<AttentionCosts, int> kAttentionCountKeys[] = {
    {"query_rows", &AttentionCosts::query_rows},
    {"multiprocessors", &AttentionCosts::multiprocessors},
    {"max_splits", &AttentionCosts::max_splits},
    {"min_split_keys", &AttentionCosts::min_split_keys},
};
constexpr FieldKey<AttentionKernelCost, int> kKernelCountKeys[] = {
    {"key_tile", &AttentionKernelCost::key_tile},
    {"slots", &AttentionKernelCost::slots},
};
constexpr FieldKey<AttentionKernelCost, double> kKernelTimeKeys[] = {
    {"launch_s", &AttentionKernelCost::launch_s},
    {"block_s", &AttentionKernelCost::block_s},
    {"key_tile_s", &AttentionKernelCost::key_tile_s},
    {"row_group_tile_s", &AttentionKernelCost::row_group_tile_s},
};
constexpr const char* kEmptyBlockKey = "empty_block_s";  // optional: 0 when absent
constexpr FieldKey<AttentionCosts, AttentionKernelCost> kKernelKeys[] = {{"unsplit", &AttentionCosts::unsplit},
                                                                       {"split", &AttentionCosts::split}};

// The object at `keys` with the keys `known`, every one of them present, and perhaps some of `optional`.
const json& complete_object(const json& object, const std::vector<std::string>& keys,
                            const std::vector<std::string>& known,
                            const std::vector<std::string>& optional = {}) {
  expect_object(object, keys);
  std::vector<std::string> allowed = known;
  allowed.insert(allowed.end(), optional.begin(), optional.end());
  allow_keys(object, keys, allowed);
  for (const std::string& key : known) {
    if (!object.contains(key)) fail(keys, "missing required key '" + key + "'");
  }
  return object;
}

int read_count(const json& value, const std::vector<std::string>& keys) {
  if (!value.is_number_integer() || value.get<int64_t>() < 1 ||
      value.get<int64_t>() > std::numeric_limits<int>::max())
    fail(keys, "expected a positive integer");
  return static_cast<int>(value.get<int64_t>());
}

double read_seconds(const json& value, const std::vector<std::string>& keys) {
  if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() < 0)
    fail(keys, "expected a number of 0 or more");
  return value.get<double>();
}

AttentionKernelCost read_kernel(const json& object, const std::vector<std::string>& keys) {
  std::vector<std::string> known;
  for (const auto& k : kKernelCountKeys) known.push_back(k.key);
  for (const auto& k : kKernelTimeKeys) known.push_back(k.key);
  complete_object(object, keys, known, {kEmptyBlockKey});
  AttentionKernelCost kernel;
  for (const auto& k : kKernelCountKeys)
    kernel.*k.field = read_count(object.at(k.key), child_keys(keys, k.key));
  for (const auto& k : kKernelTimeKeys)
    kernel.*k.field = read_seconds(object.at(k.key), child_keys(keys, k.key));
  // Files fitted before empty blocks were priced lack it: their launches had none.
  if (object.contains(kEmptyBlockKey))
    kernel.empty_block_s = read_seconds(object.at(kEmptyBlockKey), child_keys(keys, kEmptyBlockKey));
  return kernel;
}

AttentionCosts read_attention(const json& object) {
  const std::vector<std::string> root = {"serving", kServingAttention};
  std::vector<std::string> known;
  for (const auto& k : kAttentionCountKeys) known.push_back(k.key);
  for (const auto& k : kKernelKeys) known.push_back(k.key);
  complete_object(object, root, known);
  AttentionCosts costs;
  for (const auto& k : kAttentionCountKeys)
    costs.*k.field = read_count(object.at(k.key), child_keys(root, k.key));
  for (const auto& k : kKernelKeys)
    costs.*k.field = read_kernel(object.at(k.key), child_keys(root, k.key));
  return costs;
}

json attention_json(const AttentionCosts& costs) {
  json out = json::object();
  for (const auto& k : kAttentionCountKeys) out[k.key] = costs.*k.field;
  for (const auto& kernel : kKernelKeys) {
    json& object = out[kernel.key] = json::object();
    for (const auto& k : kKernelCountKeys) object[k.key] = (costs.*kernel.field).*k.field;
    for (const auto& k : kKernelTimeKeys) object[k.key] = (costs.*kernel.field).*k.field;
    object[kEmptyBlockKey] = (costs.*kernel.field).empty_block_s;
  }
  return out;
}

double read_factor(const json& value, const std::vector<std::string>& keys) {
  if (!value.is_number() || !(value.get<double>() >= 1) || !std::isfinite(value.get<double>()))
    fail(keys, "expected a factor of 1 or more");
  return value.get<double>();
}

PowerThrottle read_power(const json& object) {
  const std::vector<std::string> root = {"serving", kServingPower};
  expect_object(object, root);
  allow_keys(object, root, {"onset_s", "slowdown", "attention_slowdown"});
  for (const char* key : {"onset_s", "slowdown"}) {
    if (!object.contains(key)) fail(root, std::string("missing required key '") + key + "'");
  }
  PowerThrottle throttle{.onset_s = read_seconds(object.at("onset_s"), child_keys(root, "onset_s")),
                         .slowdown = read_factor(object.at("slowdown"), child_keys(root, "slowdown"))};
  if (object.contains("attention_slowdown")) {
    throttle.attention_slowdown =
        read_factor(object.at("attention_slowdown"), child_keys(root, "attention_slowdown"));
  }
  return throttle;
}

ServingCalibration read_serving(const json& serving) {
  const std::vector<std::string> root = {"serving"};
  expect_object(serving, root);
  std::vector<std::string> known = {kServingModel, kServingAttention, kServingPower};
  for (const ServingKey& k : kServingKeys) known.push_back(k.key);
  allow_keys(serving, root, known);
  auto require = [&](const char* key) {
    if (!serving.contains(key)) fail(root, "missing required key '" + std::string(key) + "'");
  };
  ServingCalibration result;
  require(kServingModel);
  const json& model = serving.at(kServingModel);
  if (!model.is_string())
    fail({"serving", kServingModel}, "expected a string, got " + std::string(model.type_name()));
  result.model = model.get<std::string>();
  if (serving.contains(kServingAttention))
    result.costs.attention = read_attention(serving.at(kServingAttention));
  if (serving.contains(kServingPower)) result.costs.throttle = read_power(serving.at(kServingPower));
  const bool formula_unused = result.costs.attention.has_value();
  for (const ServingKey& k : kServingKeys) {
    const bool optional = formula_unused && k.formula_attention;
    if (optional && !serving.contains(k.key)) continue;
    require(k.key);
    const json& value = serving.at(k.key);
    const std::vector<std::string> keys = child_keys(root, k.key);
    if (!value.is_number()) fail(keys, "expected a number, got " + std::string(value.type_name()));
    const double number = value.get<double>();
    const bool zero_allowed = k.zero_allowed || optional;
    if (!std::isfinite(number) || number < 0 || (number == 0 && !zero_allowed))
      fail(keys, zero_allowed ? "expected a number of 0 or more" : "expected a positive number");
    result.costs.*k.field = number;
  }
  return result;
}

// Beside `attention`, the formula's attention keys are written only where a fit gave them a value.
json serving_json(const ServingCalibration& serving) {
  json out = {{kServingModel, serving.model}};
  const std::optional<AttentionCosts>& attention = serving.costs.attention;
  for (const ServingKey& k : kServingKeys) {
    if (attention && k.formula_attention && serving.costs.*k.field == 0) continue;
    out[k.key] = serving.costs.*k.field;
  }
  if (attention) out[kServingAttention] = attention_json(*attention);
  if (const std::optional<PowerThrottle>& t = serving.costs.throttle) {
    out[kServingPower] = {{"onset_s", t->onset_s}, {"slowdown", t->slowdown}};
    if (t->attention_slowdown) out[kServingPower]["attention_slowdown"] = *t->attention_slowdown;
  }
  return out;
}

// ---- locating errors in the file's text ----

// JSON is YAML, so the config reader finds the line and column of the key path.
[[noreturn]] void fail_located(const std::string& text, const std::string& name,
                               const CalibrationKeyError& error) {
  std::optional<ConfigNode> node;
  try {
    node = ConfigNode::load_string(text, name);
  } catch (const ConfigError&) {
    throw ConfigError(name + ": " + error.what());
  }
  for (const std::string& key : error.keys()) {
    if (!node->is_map() || !node->has(key)) break;
    node = node->child(key);
  }
  node->fail(error.detail());
}

std::string joined(const std::vector<std::string>& keys) {
  std::string path;
  for (const std::string& key : keys) path += (path.empty() ? "" : ".") + key;
  return path;
}

}  // namespace

CalibrationKeyError::CalibrationKeyError(std::vector<std::string> keys, const std::string& detail)
    : ConfigError(keys.empty() ? detail : joined(keys) + ": " + detail),
      keys_(std::move(keys)),
      detail_(detail) {}

void to_json(json& out, const Calibration& calibration) {
  json hardware = json::object();
  for (const HardwareKey& k : kHardwareKeys) {
    if (const auto& value = calibration.hardware.*k.field)
      hardware[k.section][k.key] = value_json(*value, k.kind);
  }
  out = {{"tool", calibration.tool},
         {"command", calibration.command},
         {"device", calibration.device},
         {"reference_hardware", calibration.reference_hardware},
         {"hardware", hardware},
         {"kernels", kernels_json(calibration.kernels)},
         {"measurements", calibration.measurements}};
  if (calibration.serving) out["serving"] = serving_json(*calibration.serving);
}

void from_json(const json& in, Calibration& calibration) {
  expect_object(in, {});
  allow_keys(
      in, {},
      {"tool", "command", "device", "reference_hardware", "hardware", "kernels", "serving", "measurements"});
  calibration.tool = optional_string(in, "tool");
  calibration.command = optional_string(in, "command");
  calibration.device = optional_string(in, "device");
  calibration.reference_hardware = optional_string(in, "reference_hardware");
  if (!in.contains("hardware")) fail({}, "missing required key 'hardware'");
  calibration.hardware = read_hardware(in.at("hardware"));
  calibration.kernels = in.contains("kernels") ? read_kernels(in.at("kernels")) : KernelRates{};
  calibration.serving = std::nullopt;
  if (in.contains("serving")) calibration.serving = read_serving(in.at("serving"));
  calibration.measurements = json::object();
  if (in.contains("measurements")) {
    expect_object(in.at("measurements"), {"measurements"});
    calibration.measurements = in.at("measurements");
  }
}

Calibration parse_calibration(const std::string& text, const std::string& name) {
  const json parsed = parse_json_text(text, name);
  try {
    return parsed.get<Calibration>();
  } catch (const CalibrationKeyError& e) {
    fail_located(text, name, e);
  }
}

Calibration load_calibration(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError(path + ": cannot open file");
  std::stringstream text;
  text << in.rdbuf();
  return parse_calibration(text.str(), path);
}

void add_kernel_rate(KernelRates& kernels, const std::string& kernel, double bytes_per_s) {
  if (kernel == "gather" || kernel == "scatter") {
    (kernel == "gather" ? kernels.gather_bytes_per_s : kernels.scatter_bytes_per_s) = bytes_per_s;
    return;
  }
  for (Conversion conversion : {Conversion::kQuantize, Conversion::kDequantize}) {
    const std::string prefix = conversion_prefix(conversion);
    if (!kernel.starts_with(prefix)) continue;
    if (auto encoding = kernel_encoding(kernel.substr(prefix.size()))) {
      kernels.conversions.push_back({*encoding, conversion, bytes_per_s});
      return;
    }
  }
  const std::string key = kernel + kBytesPerS;
  const std::string hint = closest_match(key, example_kernel_keys());
  fail({"kernels", key}, "unknown kernel '" + kernel +
                             "': expected gather, scatter, quantize_<encoding> or "
                             "dequantize_<encoding>" +
                             (hint.empty() ? "" : " (did you mean '" + hint + "'?)"));
}

std::optional<std::string> kernel_encoding_name(const Encoding& encoding) {
  const Encoding defaults;
  switch (encoding.kind) {
    case EncodingKind::kBf16:
      return std::nullopt;
    case EncodingKind::kFp8:
      return "fp8";
    case EncodingKind::kInt4Group:
      if (encoding.scale_bytes != defaults.scale_bytes || !encoding.zero_point || encoding.group_size <= 0)
        return std::nullopt;
      return "int4_g" + std::to_string(encoding.group_size);
    case EncodingKind::kTurboQuant4:
      if (encoding.slot_align != defaults.slot_align) return std::nullopt;
      return "turboquant4";
  }
  return std::nullopt;
}

bool same_format(const Encoding& a, const Encoding& b) {
  if (a.kind != b.kind) return false;
  if (a.kind == EncodingKind::kInt4Group) {
    return a.group_size == b.group_size && a.scale_bytes == b.scale_bytes && a.zero_point == b.zero_point;
  }
  if (a.kind == EncodingKind::kTurboQuant4) return a.slot_align == b.slot_align;
  return true;
}

// kvtier-hw calibrate times the store on the machine's disk as a whole, whatever drives it has, so the
// card's drives become one drive of their total capacity with the measured rates; its IOPS limits go, the
// measurement includes whatever bound. Kept as N drives, the node would read at N times what was measured
// (an H100 card's 8 drives turned a measured 2.1 GB/s into 17 GB/s).
namespace {
void measured_disk_is_the_node(NvmeSpec& nvme) {
  if (nvme.drives <= 0) return;
  nvme.capacity *= nvme.drives;
  nvme.drives = 1;
  nvme.read_iops = nvme.write_iops = 0;
}
}  // namespace

void overlay_calibration(const Calibration& calibration, HardwareConfig& hardware) {
  const MeasuredHardware& m = calibration.hardware;
  auto set = [](std::optional<double> value, double& target) {
    if (value) target = *value;
  };
  set(m.prefill_mfu, hardware.gpu.prefill_mfu);
  set(m.memory_bandwidth_efficiency, hardware.gpu.memory_bandwidth_efficiency);
  set(m.pcie_h2d_bandwidth, hardware.pcie_h2d.bandwidth);
  set(m.pcie_d2h_bandwidth, hardware.pcie_d2h.bandwidth);
  set(m.pcie_h2d_latency, hardware.pcie_h2d.latency);
  set(m.pcie_d2h_latency, hardware.pcie_d2h.latency);
  if (m.nvme_read_bandwidth || m.nvme_write_bandwidth) measured_disk_is_the_node(hardware.nvme);
  set(m.nvme_read_bandwidth, hardware.nvme.read_bandwidth);
  set(m.nvme_write_bandwidth, hardware.nvme.write_bandwidth);
  set(m.nvme_latency, hardware.nvme.latency);
  if (m.nvme_store_read_cpu_per_gb) hardware.nvme.store_read_cpu = *m.nvme_store_read_cpu_per_gb / 1e9;
  if (m.nvme_store_write_cpu_per_gb) hardware.nvme.store_write_cpu = *m.nvme_store_write_cpu_per_gb / 1e9;
}

std::optional<StepCosts> serving_step_costs(const Calibration& calibration, const ModelCard& model) {
  if (!calibration.serving || calibration.serving->model != model.name) return std::nullopt;
  return calibration.serving->costs;
}

std::optional<double> conversion_rate(const Calibration& calibration, Conversion conversion,
                                      const Encoding& encoding) {
  for (const ConversionRate& rate : calibration.kernels.conversions) {
    if (rate.conversion == conversion && same_format(rate.encoding, encoding)) return rate.bytes_per_s;
  }
  return std::nullopt;
}

std::optional<double> layout_conversion_bytes_per_s(const Calibration& calibration, const ModelCard& model,
                                                    const KvLayout& from, const KvLayout& to) {
  auto encoding_of_layer = [](const KvLayout& layout, int layer) -> const Encoding& {
    for (const LayerGroup& g : layout.groups) {
      if (layer >= g.first_layer && layer < g.first_layer + g.layer_count) return g.encoding;
    }
    throw std::invalid_argument(layout.name + " has no layer " + std::to_string(layer));
  };
  const double bf16_bytes = static_cast<double>(bytes_per_token_per_layer(model, Encoding{}));
  double seconds_per_token = 0;
  for (int layer = 0; layer < model.layers; ++layer) {
    const Encoding& source = encoding_of_layer(from, layer);
    const Encoding& target = encoding_of_layer(to, layer);
    if (same_format(source, target)) continue;
    for (auto [encoding, conversion] :
         {std::pair{source, Conversion::kDequantize}, {target, Conversion::kQuantize}}) {
      if (encoding.kind == EncodingKind::kBf16) continue;
      std::optional<double> rate = conversion_rate(calibration, conversion, encoding);
      if (!rate) return std::nullopt;
      seconds_per_token += bf16_bytes / *rate;
    }
  }
  if (seconds_per_token == 0) return std::numeric_limits<double>::infinity();
  return static_cast<double>(from.bytes_per_token() + to.bytes_per_token()) / seconds_per_token;
}

double charged_conversion_bytes_per_s(const std::optional<Calibration>& calibration, const ModelCard& model,
                                      const KvLayout& from, const KvLayout& to, double hbm_bandwidth,
                                      int gpus) {
  std::optional<double> measured;
  if (calibration) measured = layout_conversion_bytes_per_s(*calibration, model, from, to);
  return measured ? *measured * gpus : gpus * hbm_bandwidth * 0.7;
}

}  // namespace kvtier
