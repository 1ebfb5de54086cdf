// Small helpers the kvtier-hw commands share: the command line for provenance, all-or-nothing JSON
// output, size lists from the command line, and random device data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kvtier::hw {

// main() records argv once; results quote it so a reader can rerun exactly what made a file.
void set_command_line(int argc, char** argv);
const std::string& command_line();

// Writes `value` to `path` through a temporary file and a rename, so a failed run leaves no half file.
// Throws std::runtime_error naming the path when it cannot.
void write_json_file(const std::string& path, const nlohmann::json& value);

// "16KiB,64KiB,1MiB" -> bytes, each from 1 B to 2^63 - 1 B. Throws ConfigError naming the option and the
// bad element.
std::vector<uint64_t> parse_size_list(const std::string& option, const std::string& text);
// "bf16,turboquant4" -> {"bf16", "turboquant4"}.
std::vector<std::string> split_list(const std::string& text);

// Fills device memory with seeded random bytes (every byte drawn, no repeating pattern).
void fill_random_device(std::byte* device, uint64_t bytes, uint64_t seed);
// Fills device memory with random bf16 values in [-1, 1) (a repeated 64 MiB pattern: for timing only).
void fill_random_bf16_device(std::byte* device, uint64_t bytes);

// "54.93 GB/s" style for tables.
std::string rate_text(double bytes_per_s);

}  // namespace kvtier::hw
