#include "hw/store/block_checksum.h"

#include <zlib.h>

namespace kvtier::hw {

uint32_t block_checksum(std::span<const std::byte> bytes) {
  const auto* data = reinterpret_cast<const Bytef*>(bytes.data());
  return static_cast<uint32_t>(crc32_z(crc32_z(0L, Z_NULL, 0), data, bytes.size()));
}

}  // namespace kvtier::hw
