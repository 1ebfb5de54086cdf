#include "hw/store/store_format.h"

#include <algorithm>
#include <cstring>

#include "hw/store/block_checksum.h"
#include "hw/store/store_error.h"

namespace kvtier::hw {
namespace {

constexpr char kMagic[8] = {'K', 'V', 'T', 'I', 'E', 'R', 'N', 'V'};
// Magic, version, checksum, slot bytes, slots, stripe index, stripe count, then the header's CRC-32C.
constexpr size_t kFieldBytes = 8 + 4 + 4 + 8 + 8 + 4 + 4;

template <typename T>
void put(std::vector<std::byte>& out, size_t& at, T value) {
  std::memcpy(out.data() + at, &value, sizeof value);  // little-endian on every target kvtier builds for
  at += sizeof value;
}

template <typename T>
T get(std::span<const std::byte> in, size_t& at) {
  T value;
  std::memcpy(&value, in.data() + at, sizeof value);
  at += sizeof value;
  return value;
}

}  // namespace

const char* to_string(ChecksumKind kind) {
  switch (kind) {
    case ChecksumKind::kNone:
      return "no checksum";
    case ChecksumKind::kCrc32c:
      return "CRC-32C";
  }
  return "an unknown checksum";
}

std::vector<std::byte> encode_header(const StoreFileHeader& header) {
  std::vector<std::byte> block(kStoreHeaderBytes);
  std::memcpy(block.data(), kMagic, sizeof kMagic);
  size_t at = sizeof kMagic;
  put(block, at, header.format_version);
  put(block, at, static_cast<uint32_t>(header.checksum));
  put(block, at, header.slot_bytes);
  put(block, at, header.slots);
  put(block, at, header.stripe_index);
  put(block, at, header.stripe_count);
  put(block, at, block_checksum(std::span(block).first(kFieldBytes)));
  return block;
}

std::string describe_store_file(std::span<const std::byte> first_block) {
  const auto all_zero = [](std::span<const std::byte> bytes) {
    return std::all_of(bytes.begin(), bytes.end(), [](std::byte b) { return b == std::byte{0}; });
  };
  if (all_zero(first_block)) return "an empty store file (its header block is all zeros)";
  if (first_block.size() < kFieldBytes + 4 || std::memcmp(first_block.data(), kMagic, sizeof kMagic) != 0) {
    return "no kvtier NVMe store header: a store file of format 1 (kvtier before format 2: zlib CRC-32 "
           "per block, no header) or another program's file";
  }
  size_t at = sizeof kMagic;
  const auto version = get<uint32_t>(first_block, at);
  const auto checksum = static_cast<ChecksumKind>(get<uint32_t>(first_block, at));
  const auto slot_bytes = get<uint64_t>(first_block, at);
  const auto slots = get<uint64_t>(first_block, at);
  const auto stripe_index = get<uint32_t>(first_block, at);
  const auto stripe_count = get<uint32_t>(first_block, at);
  if (get<uint32_t>(first_block, at) != block_checksum(first_block.first(kFieldBytes))) {
    return "a kvtier NVMe store header that fails its own CRC-32C (a damaged header)";
  }
  if (version != kStoreFormatVersion) {
    return "a kvtier NVMe store of format " + std::to_string(version) + ", which this kvtier (format " +
           std::to_string(kStoreFormatVersion) + ") does not read";
  }
  return "a kvtier NVMe store of format " + std::to_string(version) + " (" + to_string(checksum) + ", stripe " +
         std::to_string(stripe_index + 1) + " of " + std::to_string(stripe_count) + ", " + std::to_string(slots) +
         " slots of " + std::to_string(slot_bytes) + " bytes)";
}

void require_fresh_file(const std::string& file_name, std::span<const std::byte> first_block) {
  if (std::all_of(first_block.begin(), first_block.end(), [](std::byte b) { return b == std::byte{0}; })) return;
  throw StoreError(StoreErrc::kBadRequest,
                   file_name + " holds " + describe_store_file(first_block) +
                       "; an NVMe store starts from an empty file and keeps its index in memory, so no earlier "
                       "store's blocks can be read back: remove the file or choose another path");
}

}  // namespace kvtier::hw
