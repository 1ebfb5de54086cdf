#include "hw/tools/tool_support.h"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>

#include "sim/core/checked_math.h"
#include "sim/core/config.h"
#include "hw/gpu/check.h"
#include "sim/core/units.h"

namespace kvtier::hw {
namespace {
std::string recorded_command_line;
}

void set_command_line(int argc, char** argv) {
  recorded_command_line.clear();
  for (int i = 0; i < argc; ++i) {
    if (i > 0) recorded_command_line += ' ';
    recorded_command_line += i == 0 ? std::filesystem::path(argv[0]).filename().string() : argv[i];
  }
}

const std::string& command_line() {
  return recorded_command_line;
}

void write_json_file(const std::string& path, const nlohmann::json& value) {
  const std::string partial = path + ".partial";
  {
    std::ofstream out(partial);
    out << value.dump(2) << '\n';
    if (!out) throw std::runtime_error("cannot write " + partial);
  }
  std::error_code error;
  std::filesystem::rename(partial, path, error);
  if (error) {
    std::filesystem::remove(partial);
    throw std::runtime_error("cannot write " + path + ": " + error.message());
  }
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    if (comma > start) items.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return items;
}

std::vector<uint64_t> parse_size_list(const std::string& option, const std::string& text) {
  std::vector<uint64_t> sizes;
  for (const std::string& item : split_list(text)) {
    try {
      std::optional<int64_t> bytes = checked_to_int64(parse_bytes(item));
      if (!bytes) throw UnitError("more than " + std::to_string(kMaxCount) + " B");
      if (*bytes == 0) throw UnitError("a size must be at least 1B");
      sizes.push_back(static_cast<uint64_t>(*bytes));
    } catch (const std::exception& error) {
      throw ConfigError(option + ": expected sizes like 16KiB,1MiB; '" + item + "': " + error.what());
    }
  }
  if (sizes.empty()) throw ConfigError(option + ": expected at least one size");
  return sizes;
}

void fill_random_device(std::byte* device, uint64_t bytes, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> chunk((64ull << 20) / 8);
  for (uint64_t offset = 0; offset < bytes; offset += chunk.size() * 8) {
    for (uint64_t& word : chunk) word = rng();
    KVTIER_GPU_CHECK(gpuMemcpy(device + offset, chunk.data(),
                               std::min<uint64_t>(chunk.size() * 8, bytes - offset), gpuMemcpyHostToDevice));
  }
}

void fill_random_bf16_device(std::byte* device, uint64_t bytes) {
  const uint64_t pattern_bytes = std::min<uint64_t>(bytes, 64ull << 20);
  std::vector<uint16_t> pattern(pattern_bytes / 2);
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  for (uint16_t& element : pattern) {
    const float f = value(rng);
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    element = static_cast<uint16_t>(bits >> 16);  // bf16 is the top half of an fp32
  }
  for (uint64_t offset = 0; offset < bytes; offset += pattern_bytes) {
    KVTIER_GPU_CHECK(gpuMemcpy(device + offset, pattern.data(), std::min(pattern_bytes, bytes - offset),
                               gpuMemcpyHostToDevice));
  }
}

std::string rate_text(double bytes_per_s) {
  return format_bandwidth(bytes_per_s);
}

}  // namespace kvtier::hw
