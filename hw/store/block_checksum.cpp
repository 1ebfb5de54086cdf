#include "hw/store/block_checksum.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#define KVTIER_CRC32C_TARGET __attribute__((target("sse4.2")))
#elif defined(__aarch64__)
#include <arm_acle.h>
#include <asm/hwcap.h>
#include <sys/auxv.h>
#if defined(__clang__)  // clang's arm_acle.h declares __crc32c* only when the whole file targets +crc
#define KVTIER_CRC32C_TARGET __attribute__((target("crc")))
#define KVTIER_CRC32CD __builtin_arm_crc32cd
#define KVTIER_CRC32CB __builtin_arm_crc32cb
#else
#define KVTIER_CRC32C_TARGET __attribute__((target("+crc")))
#define KVTIER_CRC32CD __crc32cd
#define KVTIER_CRC32CB __crc32cb
#endif
#endif

namespace kvtier::hw {
namespace {

// The CRC-32C polynomial, bit-reflected (the least significant bit is the x^31 coefficient).
constexpr uint32_t kPolynomial = 0x82F63B78u;

// a * b modulo the polynomial, both reflected (zlib's multmodp, for CRC-32C).
constexpr uint32_t multiply_mod_p(uint32_t a, uint32_t b) {
  uint32_t product = 0;
  for (uint32_t bit = 1u << 31; bit != 0; bit >>= 1) {
    if (a & bit) product ^= b;
    b = (b & 1u) ? (b >> 1) ^ kPolynomial : b >> 1;
  }
  return product;
}

// x^(8 * bytes) modulo the polynomial: what appending `bytes` zero bytes multiplies a CRC register by.
constexpr uint32_t x_pow_8n_mod_p(uint64_t bytes) {
  uint32_t result = 1u << 31;  // x^0
  uint32_t square = 1u << 23;  // x^8: one byte
  for (; bytes != 0; bytes >>= 1) {
    if (bytes & 1) result = multiply_mod_p(square, result);
    square = multiply_mod_p(square, square);
  }
  return result;
}

// The register after `bytes` zero bytes, by table: four lookups instead of a 32-step multiplication.
struct ZeroShift {
  std::array<std::array<uint32_t, 256>, 4> table{};
  constexpr explicit ZeroShift(uint64_t bytes) {
    const uint32_t factor = x_pow_8n_mod_p(bytes);
    for (uint32_t lane = 0; lane < 4; ++lane) {
      for (uint32_t value = 0; value < 256; ++value) {
        table[lane][value] = multiply_mod_p(factor, value << (8 * lane));
      }
    }
  }
  constexpr uint32_t operator()(uint32_t crc) const {
    return table[0][crc & 0xFF] ^ table[1][(crc >> 8) & 0xFF] ^ table[2][(crc >> 16) & 0xFF] ^
           table[3][crc >> 24];
  }
};

// Slice-by-8 tables: table[k][b] is the register after byte b followed by k zero bytes.
constexpr std::array<std::array<uint32_t, 256>, 8> make_slice_tables() {
  std::array<std::array<uint32_t, 256>, 8> table{};
  for (uint32_t value = 0; value < 256; ++value) {
    uint32_t crc = value;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (kPolynomial & (0u - (crc & 1u)));
    table[0][value] = crc;
  }
  for (uint32_t value = 0; value < 256; ++value) {
    for (size_t k = 1; k < 8; ++k) table[k][value] = (table[k - 1][value] >> 8) ^ table[0][table[k - 1][value] & 0xFF];
  }
  return table;
}

constexpr auto kSlice = make_slice_tables();

uint64_t load_le64(const std::byte* p) {
  uint64_t word;
  std::memcpy(&word, p, sizeof word);
  return word;  // every target kvtier builds for is little-endian
}

uint32_t table_extend(uint32_t crc, const std::byte* p, size_t n) {
  for (; n >= 8; p += 8, n -= 8) {
    const uint64_t word = load_le64(p) ^ crc;
    crc = kSlice[7][word & 0xFF] ^ kSlice[6][(word >> 8) & 0xFF] ^ kSlice[5][(word >> 16) & 0xFF] ^
          kSlice[4][(word >> 24) & 0xFF] ^ kSlice[3][(word >> 32) & 0xFF] ^ kSlice[2][(word >> 40) & 0xFF] ^
          kSlice[1][(word >> 48) & 0xFF] ^ kSlice[0][word >> 56];
  }
  for (; n > 0; ++p, --n) crc = (crc >> 8) ^ kSlice[0][(crc ^ static_cast<uint8_t>(*p)) & 0xFF];
  return crc;
}

#if defined(KVTIER_CRC32C_TARGET)

// Stretch lengths of the three interleaved chains: long ones for the bulk, short ones for the rest of a
// block, so a 16 KiB page runs interleaved too. Multiples of 8.
constexpr size_t kLongStretch = 4096;
constexpr size_t kShortStretch = 256;
constexpr ZeroShift kShiftLong(kLongStretch);
constexpr ZeroShift kShiftShort(kShortStretch);

#if defined(__x86_64__)
KVTIER_CRC32C_TARGET inline uint32_t step64(uint32_t crc, uint64_t word) {
  return static_cast<uint32_t>(_mm_crc32_u64(crc, word));
}
KVTIER_CRC32C_TARGET inline uint32_t step8(uint32_t crc, std::byte b) {
  return _mm_crc32_u8(crc, static_cast<uint8_t>(b));
}
bool hardware_available() { return __builtin_cpu_supports("sse4.2"); }
constexpr const char* kHardwareName = "sse4.2";
#else
KVTIER_CRC32C_TARGET inline uint32_t step64(uint32_t crc, uint64_t word) { return KVTIER_CRC32CD(crc, word); }
KVTIER_CRC32C_TARGET inline uint32_t step8(uint32_t crc, std::byte b) {
  return KVTIER_CRC32CB(crc, static_cast<uint8_t>(b));
}
bool hardware_available() { return (::getauxval(AT_HWCAP) & HWCAP_CRC32) != 0; }
constexpr const char* kHardwareName = "armv8-crc";
#endif

// Three chains over the stretches [0, L), [L, 2L), [2L, 3L) of each 3L bytes, joined as
// crc(AB) = shift(crc(A), |B|) ^ crc_from_zero(B), which holds because the register update is linear.
template <size_t kStretch>
KVTIER_CRC32C_TARGET inline uint32_t interleaved(uint32_t crc, const std::byte*& p, size_t& n,
                                                 const ZeroShift& shift) {
  for (; n >= 3 * kStretch; p += 3 * kStretch, n -= 3 * kStretch) {
    uint32_t a = crc, b = 0, c = 0;
    for (size_t i = 0; i < kStretch; i += 8) {
      a = step64(a, load_le64(p + i));
      b = step64(b, load_le64(p + kStretch + i));
      c = step64(c, load_le64(p + 2 * kStretch + i));
    }
    crc = shift(shift(a) ^ b) ^ c;
  }
  return crc;
}

KVTIER_CRC32C_TARGET uint32_t hardware_extend(uint32_t crc, const std::byte* p, size_t n) {
  crc = interleaved<kLongStretch>(crc, p, n, kShiftLong);
  crc = interleaved<kShortStretch>(crc, p, n, kShiftShort);
  for (; n >= 8; p += 8, n -= 8) crc = step64(crc, load_le64(p));
  for (; n > 0; ++p, --n) crc = step8(crc, *p);
  return crc;
}

#endif  // KVTIER_CRC32C_TARGET

struct Implementation {
  uint32_t (*extend)(uint32_t, const std::byte*, size_t);
  const char* name;
};

Implementation choose_implementation() {
#if defined(KVTIER_CRC32C_TARGET)
  if (hardware_available()) return {hardware_extend, kHardwareName};
#endif
  return {table_extend, "table"};
}

const Implementation& implementation() {
  static const Implementation chosen = choose_implementation();
  return chosen;
}

}  // namespace

uint32_t block_checksum(std::span<const std::byte> bytes) {
  return ~implementation().extend(0xFFFFFFFFu, bytes.data(), bytes.size());
}

uint32_t crc32c_portable(std::span<const std::byte> bytes) {
  return ~table_extend(0xFFFFFFFFu, bytes.data(), bytes.size());
}

const char* crc32c_implementation() {
  return implementation().name;
}

}  // namespace kvtier::hw
