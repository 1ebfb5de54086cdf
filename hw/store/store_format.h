// The header at the start of every NVMe store file: which format and which checksum its blocks carry.
//
// Format 1 (kvtier before this header) had none: blocks from offset 0, a zlib CRC-32 per block, kept in
// memory. Format 2 puts one 4 KiB header block first, then the slots; the header names the format, the
// checksum (CRC-32C, or none where the data is verified elsewhere), the slot size, the slots in this
// file, and the file's place in a striped store. A store's index lives in memory, so no store file is
// ever read back by a later process; the header is what lets a store refuse, with a message naming the
// file and what it holds, a file that is not a fresh one (a leftover from a process that died, a file
// of another format, a file that is not a store's) instead of overwriting it silently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace kvtier::hw {

inline constexpr uint32_t kStoreFormatVersion = 2;
inline constexpr uint64_t kStoreHeaderBytes = 4096;

enum class ChecksumKind : uint32_t {
  kNone = 0,   // no per-block checksum (GPUDirect paths verify elsewhere)
  kCrc32c = 1  // CRC-32C (block_checksum())
};
const char* to_string(ChecksumKind kind);

struct StoreFileHeader {
  uint32_t format_version = kStoreFormatVersion;
  ChecksumKind checksum = ChecksumKind::kCrc32c;
  uint64_t slot_bytes = 0;
  uint64_t slots = 0;  // in this file
  uint32_t stripe_index = 0;
  uint32_t stripe_count = 1;
};

// The header's kStoreHeaderBytes on disk (magic, fields, a CRC-32C of them; zeros after).
std::vector<std::byte> encode_header(const StoreFileHeader& header);

// Throws StoreError(kBadRequest) naming `file_name` and what its first kStoreHeaderBytes hold unless
// they are all zero (a freshly preallocated file).
void require_fresh_file(const std::string& file_name, std::span<const std::byte> first_block);

// What the first kStoreHeaderBytes of a file say it is ("a kvtier NVMe store of format 2 (CRC-32C,
// stripe 1 of 1, 65536-byte slots)", "no kvtier NVMe store header: ..."), for error messages.
std::string describe_store_file(std::span<const std::byte> first_block);

}  // namespace kvtier::hw
