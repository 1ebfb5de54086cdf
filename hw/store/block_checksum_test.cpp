#include "hw/store/block_checksum.h"

#include <gtest/gtest.h>

#include <random>
#include <string_view>
#include <vector>

namespace kvtier::hw {
namespace {

std::span<const std::byte> as_bytes(std::string_view text) {
  return std::as_bytes(std::span(text));
}

// CRC-32C one bit at a time, straight from the definition: reflected polynomial 0x82F63B78, initial
// value and final xor 0xFFFFFFFF. Slow and obviously right; the fast paths are held to it.
uint32_t bitwise_crc32c(std::span<const std::byte> bytes) {
  uint32_t crc = 0xFFFFFFFFu;
  for (std::byte b : bytes) {
    crc ^= static_cast<uint8_t>(b);
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
  }
  return ~crc;
}

std::vector<std::byte> random_bytes(size_t size, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::byte> bytes(size);
  for (std::byte& b : bytes) b = static_cast<std::byte>(rng());
  return bytes;
}

TEST(BlockChecksum, MatchesThePublishedCrc32cCheckValues) {
  // CRC-32C/ISCSI check value over the ASCII digits 1..9, and RFC 3720 (iSCSI) B.4's 32 zero bytes,
  // 32 bytes of 0xFF and the ascending bytes 0..31.
  EXPECT_EQ(block_checksum(as_bytes("123456789")), 0xE3069283u);
  EXPECT_EQ(block_checksum(std::vector<std::byte>(32, std::byte{0})), 0x8A9136AAu);
  EXPECT_EQ(block_checksum(std::vector<std::byte>(32, std::byte{0xFF})), 0x62A8AB43u);
  std::vector<std::byte> ascending(32);
  for (size_t i = 0; i < ascending.size(); ++i) ascending[i] = static_cast<std::byte>(i);
  EXPECT_EQ(block_checksum(ascending), 0x46DD794Eu);
  EXPECT_EQ(block_checksum({}), 0u);
}

// Every length around the fast paths' strides (8-byte words, 3 x 256 and 3 x 4096-byte interleaved
// runs) and unaligned starts, against the bitwise definition, for whichever path this CPU uses and
// for the portable table.
TEST(BlockChecksum, EveryPathMatchesTheBitwiseDefinitionAtAwkwardLengthsAndOffsets) {
  const std::vector<std::byte> data = random_bytes(3 * 3 * 4096 + 4096, 11);
  const std::vector<size_t> lengths = {1,    7,    8,    9,     255,   767,   768,   769,  1000,
                                       4095, 4096, 8191, 12287, 12288, 12289, 24576, 30000, 40000};
  for (size_t offset : {0, 1, 3, 8}) {
    for (size_t length : lengths) {
      const auto bytes = std::span(data).subspan(offset, length);
      const uint32_t expected = bitwise_crc32c(bytes);
      EXPECT_EQ(block_checksum(bytes), expected) << "offset " << offset << " length " << length;
      EXPECT_EQ(crc32c_portable(bytes), expected) << "offset " << offset << " length " << length;
    }
  }
}

TEST(BlockChecksum, NamesTheImplementationItUses) {
  const std::string name = crc32c_implementation();
#if defined(__x86_64__)
  EXPECT_EQ(name, __builtin_cpu_supports("sse4.2") ? "sse4.2" : "table");
#else
  EXPECT_FALSE(name.empty());
#endif
}

TEST(BlockChecksum, ChangesWhenOneBitFlips) {
  std::string text(4096, 'k');
  const uint32_t before = block_checksum(as_bytes(text));
  text[1234] ^= 0x10;
  EXPECT_NE(block_checksum(as_bytes(text)), before);
}

}  // namespace
}  // namespace kvtier::hw
