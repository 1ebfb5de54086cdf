#include "hw/tools/breakeven_probe.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>

#include "sim/core/config.h"
#include "sim/core/token_count.h"

namespace kvtier::hw {
namespace {

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t at = text.find(separator); at != std::string::npos; at = text.find(separator, start)) {
    parts.push_back(text.substr(start, at - start));
    start = at + 1;
  }
  parts.push_back(text.substr(start));
  return parts;
}

int64_t whole_blocks_down(int64_t tokens, int64_t block_tokens) {
  return tokens / block_tokens * block_tokens;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

nlohmann::json sample_json(const BreakevenSample& s) {
  return {{"load_s", s.load_s}, {"hit_s", s.hit_s}, {"miss_s", s.miss_s}};
}

}  // namespace

std::vector<int64_t> sweep_lengths(int64_t first, int64_t last, double ratio, int64_t block_tokens) {
  if (!(ratio > 1) || !std::isfinite(ratio)) throw ConfigError("--sweep: expected a ratio above 1");
  if (first > last) throw ConfigError("--sweep: expected the first length at most the last");
  const int64_t final_length = whole_blocks_down(last, block_tokens);
  if (final_length < block_tokens) {
    throw ConfigError("--sweep: the last length is under one block of " + std::to_string(block_tokens) +
                      " tokens");
  }
  std::vector<int64_t> lengths;
  for (int64_t length = (first + block_tokens - 1) / block_tokens * block_tokens; length < final_length;) {
    lengths.push_back(length);
    const auto grown = static_cast<int64_t>(std::floor(static_cast<double>(length) * ratio));
    length = std::max(length + block_tokens, whole_blocks_down(grown, block_tokens));
  }
  lengths.push_back(final_length);
  return lengths;
}

std::vector<int64_t> parse_sweep(const std::string& text, int64_t block_tokens) {
  const std::vector<std::string> parts = split(text, ':');
  if (parts.size() != 3)
    throw ConfigError("--sweep: expected FIRST:LAST:RATIO such as 1K:64K:1.25, got '" + text + "'");
  double ratio = 0;
  try {
    size_t used = 0;
    ratio = std::stod(parts[2], &used);
    if (used != parts[2].size()) ratio = 0;
  } catch (const std::exception&) {
    ratio = 0;
  }
  if (!(ratio > 1))
    throw ConfigError("--sweep: expected a ratio above 1 such as 1.25, got '" + parts[2] + "'");
  return sweep_lengths(parse_token_count("--sweep", parts[0]), parse_token_count("--sweep", parts[1]), ratio,
                       block_tokens);
}

std::vector<int64_t> parse_contexts(const std::string& text, int64_t block_tokens) {
  std::vector<int64_t> lengths;
  for (const std::string& part : split(text, ',')) {
    const int64_t tokens = whole_blocks_down(parse_token_count("--contexts", part), block_tokens);
    if (tokens == 0) {
      throw ConfigError("--contexts: '" + part + "' is under one block of " + std::to_string(block_tokens) +
                        " tokens");
    }
    lengths.push_back(tokens);
  }
  std::sort(lengths.begin(), lengths.end());
  lengths.erase(std::unique(lengths.begin(), lengths.end()), lengths.end());
  return lengths;
}

BreakevenProbe::BreakevenProbe(TieredStore& store, Prefill& prefill, int64_t block_tokens, int64_t new_tokens)
    : store_(store),
      prefill_(prefill),
      block_tokens_(block_tokens),
      new_tokens_(new_tokens),
      hbm_capacity_bytes_(store.cache().tier(0).capacity_bytes) {
  if (store.cache().tier_count() != 2)
    throw std::invalid_argument("breakeven probe: expected HBM and one lower tier");
}

std::vector<uint64_t> BreakevenProbe::fresh_blocks(int64_t count) {
  std::vector<uint64_t> blocks;
  for (int64_t i = 0; i < count; ++i) blocks.push_back(next_block_++);
  return blocks;
}

StoreAdmission BreakevenProbe::admit(std::span<const uint64_t> chain) {
  StoreAdmission admission = store_.admit(chain);
  if (!admission.admitted) throw std::logic_error("breakeven probe: HBM cannot hold the request");
  return admission;
}

// Every cached block leaves HBM for the lower tier (the store copies it down), and HBM is empty again.
void BreakevenProbe::evict_hbm() {
  if (!store_.set_hbm_capacity(0) || !store_.set_hbm_capacity(hbm_capacity_bytes_)) {
    throw std::logic_error("breakeven probe: HBM still holds a request's blocks");
  }
}

BreakevenSample BreakevenProbe::measure(int64_t prefix_tokens) {
  if (prefix_tokens <= 0 || prefix_tokens % block_tokens_ != 0) {
    throw std::invalid_argument("breakeven probe: a prefix must be a whole number of blocks");
  }
  const int64_t prefix_blocks = prefix_tokens / block_tokens_;
  const int64_t suffix_blocks = (new_tokens_ + block_tokens_ - 1) / block_tokens_;
  BreakevenSample sample;

  const std::vector<uint64_t> miss_chain = fresh_blocks(prefix_blocks + suffix_blocks);
  StoreAdmission miss = admit(miss_chain);
  sample.miss_s = prefill_.run(0, prefix_tokens + new_tokens_, miss.hbm_pages);
  store_.release(miss);
  evict_hbm();

  std::vector<uint64_t> hit_chain(miss_chain.begin(), miss_chain.begin() + prefix_blocks);
  for (uint64_t block : fresh_blocks(suffix_blocks)) hit_chain.push_back(block);
  const auto start = std::chrono::steady_clock::now();
  StoreAdmission hit = admit(hit_chain);
  sample.load_s = seconds_since(start);
  if (hit.hit_blocks != prefix_blocks || hit.hits_by_tier.at(1) != prefix_blocks) {
    throw std::logic_error("breakeven probe: the prefix's " + std::to_string(prefix_blocks) +
                           " blocks were not all loaded from the lower tier (" +
                           std::to_string(hit.hit_blocks) + " hits)");
  }
  sample.hit_s = sample.load_s + prefill_.run(prefix_tokens, new_tokens_, hit.hbm_pages);
  store_.release(hit);
  evict_hbm();
  return sample;
}

BreakevenSample median_sample(std::vector<BreakevenSample> samples) {
  auto field = [&](double BreakevenSample::*member) {
    std::vector<double> values;
    for (const BreakevenSample& s : samples) values.push_back(s.*member);
    return median(values);
  };
  return {field(&BreakevenSample::load_s), field(&BreakevenSample::hit_s), field(&BreakevenSample::miss_s)};
}

nlohmann::json sweep_json(const SweepRecord& record) {
  nlohmann::json points = nlohmann::json::array();
  for (const SweepPoint& p : record.points) {
    const BreakevenSample m = median_sample(p.samples);
    nlohmann::json samples = nlohmann::json::array();
    for (const BreakevenSample& s : p.samples) samples.push_back(sample_json(s));
    points.push_back({{"kv", p.kv},
                      {"path", p.path},
                      {"prefix_tokens", p.prefix_tokens},
                      {"load_s", m.load_s},
                      {"hit_s", m.hit_s},
                      {"miss_s", m.miss_s},
                      {"samples", samples}});
  }
  return {
      {"tool", "kvtier-hw breakeven"},   {"command", record.command}, {"device", record.device},
      {"model", record.model},           {"hbm_kv", record.hbm_kv},   {"block_tokens", record.block_tokens},
      {"new_tokens", record.new_tokens}, {"prefill", "one step"},     {"points", points}};
}

}  // namespace kvtier::hw
