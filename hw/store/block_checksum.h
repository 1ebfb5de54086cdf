// The checksum the NVMe store keeps for every block it writes: CRC-32C (Castagnoli, as in iSCSI, ext4,
// RocksDB), computed at memory speed.
//
// A CRC detects every burst error up to 32 bits and any odd number of flipped bits, which is what a
// torn or misdirected disk write looks like; it is not a defence against deliberate tampering.
// CRC-32C rather than zlib's CRC-32 because processors compute it in one instruction: SSE4.2's crc32
// on x86-64, the ARMv8 CRC extension's crc32c on AArch64. One chain of that instruction is latency
// bound (3 cycles per 8 bytes), so long buffers run three chains over three adjacent stretches at
// once and join them with a CRC shift; a core then checksums faster than a Gen5 drive delivers.
// The instruction is chosen at run time (a binary built for any x86-64 runs anywhere); a CPU without
// it gets a portable table-driven CRC-32C with the same results, at about a tenth of the speed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace kvtier::hw {

// CRC-32C of `bytes` (initial value and final xor 0xFFFFFFFF): 0xE3069283 for "123456789".
uint32_t block_checksum(std::span<const std::byte> bytes);

// The same CRC-32C through the portable tables alone, whatever the CPU offers.
uint32_t crc32c_portable(std::span<const std::byte> bytes);

// "sse4.2", "armv8-crc" or "table": how block_checksum() computes on this CPU.
const char* crc32c_implementation();

}  // namespace kvtier::hw
