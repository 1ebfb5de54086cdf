#include "hw/store/block_checksum.h"

#include <gtest/gtest.h>

#include <string_view>

namespace kvtier::hw {
namespace {

std::span<const std::byte> as_bytes(std::string_view text) {
  return std::as_bytes(std::span(text));
}

TEST(BlockChecksum, MatchesTheStandardCrc32CheckValue) {
  // The published check value of CRC-32/ISO-HDLC (zlib, IEEE 802.3) over the ASCII digits 1..9.
  EXPECT_EQ(block_checksum(as_bytes("123456789")), 0xCBF43926u);
}

TEST(BlockChecksum, ChangesWhenOneBitFlips) {
  std::string text(4096, 'k');
  const uint32_t before = block_checksum(as_bytes(text));
  text[1234] ^= 0x10;
  EXPECT_NE(block_checksum(as_bytes(text)), before);
}

}  // namespace
}  // namespace kvtier::hw
