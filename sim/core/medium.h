// Where a cache tier's KV lives: HBM, host DRAM, NVMe or a remote pool.
//
// One type for the engine's platform (which host a transfer starts and ends on), the break-even analysis
// (which path a prefix is loaded over) and the hardware mode's store (which memory a tier's slots are in).
// A tier file names its medium with the `medium:` key, in the words medium_name() writes.
#pragma once

#include <array>
#include <optional>
#include <string_view>

namespace kvtier {

enum class Medium { kHbm, kDram, kNvme, kRemote };

inline constexpr std::array<Medium, 4> kMedia = {Medium::kHbm, Medium::kDram, Medium::kNvme, Medium::kRemote};

// "hbm", "dram", "nvme", "remote".
constexpr std::string_view medium_name(Medium medium) {
  switch (medium) {
    case Medium::kHbm:
      return "hbm";
    case Medium::kDram:
      return "dram";
    case Medium::kNvme:
      return "nvme";
    case Medium::kRemote:
      return "remote";
  }
  return "?";
}

// The medium medium_name() calls `name`, or nullopt.
constexpr std::optional<Medium> parse_medium(std::string_view name) {
  for (Medium medium : kMedia) {
    if (medium_name(medium) == name) return medium;
  }
  return std::nullopt;
}

}  // namespace kvtier
