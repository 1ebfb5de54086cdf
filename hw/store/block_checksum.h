// The checksum the NVMe store keeps for every block it writes.
//
// CRC-32 (the zlib / IEEE 802.3 polynomial) computed by zlib, which is on every machine kvtier builds
// on. A CRC detects every burst error up to 32 bits and any odd number of flipped bits, which is what
// a torn or misdirected disk write looks like; it is not a defence against deliberate tampering.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace kvtier::hw {

uint32_t block_checksum(std::span<const std::byte> bytes);

}  // namespace kvtier::hw
