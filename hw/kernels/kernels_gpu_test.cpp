// The GPU kernels against their CPU references, byte for byte. Skips where no GPU is visible.
#include "hw/kernels/kernels_gpu.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "hw/gpu/check.h"
#include "hw/gpu/device_buffer.h"
#include "sim/core/kv_layout.h"
#include "hw/kernels/quant_math.h"

namespace kvtier::hw {
namespace {

using gpu::DeviceBuffer;

class GpuKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    if (gpu::visible_device_count() == 0)
      GTEST_SKIP() << "no GPU visible: the GPU kernel tests need a device";
  }
};

std::vector<std::byte> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::byte> out(n);
  // Opaque content: NaN patterns, -0 and 0xFF must survive as they are.
  const uint8_t specials[] = {0xff, 0x7f, 0xc0, 0x80, 0x00};
  for (size_t i = 0; i < n; ++i) {
    uint32_t r = rng();
    out[i] = static_cast<std::byte>(r % 7 == 0 ? specials[(r >> 8) % 5] : r >> 16);
  }
  return out;
}

// Pools with host mirrors; page sizes include a large bf16 page, a 16-byte multiple, ragged and tiny ones.
struct PoolSet {
  std::vector<int64_t> page_bytes = {131072, 8704, 1091, 17};
  std::vector<int64_t> strides = {131072 + 256, 8704, 1100, 33};
  int64_t pages = 48;
  std::vector<std::vector<std::byte>> host;
  std::vector<DeviceBuffer<std::byte>> device;

  PoolSet(uint32_t seed, std::vector<int64_t> bytes, std::vector<int64_t> page_strides)
      : page_bytes(std::move(bytes)), strides(std::move(page_strides)) {
    fill(seed);
  }
  explicit PoolSet(uint32_t seed) { fill(seed); }
  void fill(uint32_t seed) {
    for (size_t g = 0; g < page_bytes.size(); ++g) {
      host.push_back(random_bytes(static_cast<size_t>(strides[g] * pages), seed + static_cast<uint32_t>(g)));
      device.emplace_back(host[g].size());
      device[g].upload(host[g].data(), host[g].size());
    }
  }
  std::vector<PageGroup> groups(bool on_device) {
    std::vector<PageGroup> out;
    for (size_t g = 0; g < page_bytes.size(); ++g) {
      out.push_back({on_device ? device[g].data() : host[g].data(), pages, strides[g], page_bytes[g]});
    }
    return out;
  }
};

std::vector<int64_t> shuffled_ids(int64_t pages, size_t count, uint32_t seed) {
  std::vector<int64_t> ids(static_cast<size_t>(pages));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), std::mt19937(seed));
  ids.resize(count);
  return ids;
}

TEST_F(GpuKernels, GatherMatchesReferenceAtAlignedAndMisalignedStaging) {
  PoolSet pools(10);
  std::vector<int64_t> ids = shuffled_ids(pools.pages, 37, 11);
  DeviceBuffer<int64_t> device_ids(ids.size());
  device_ids.upload(ids.data(), ids.size());
  const size_t staged = ids.size() * staged_page_bytes(pools.groups(false));
  for (size_t offset : {0, 3, 8}) {
    std::vector<std::byte> expected(staged);
    copy_pages_reference(TransferDirection::kGather, pools.groups(false), ids, expected.data());
    DeviceBuffer<std::byte> staging(staged + 16);
    copy_pages(TransferDirection::kGather, pools.groups(true), device_ids.data(), ids.size(),
               staging.data() + offset, nullptr);
    std::vector<std::byte> got(staged + 16);
    staging.download(got.data(), got.size());
    ASSERT_EQ(std::memcmp(got.data() + offset, expected.data(), staged), 0) << "staging offset " << offset;
  }
}

TEST_F(GpuKernels, ScatterMatchesReferenceAndLeavesOtherBytesAlone) {
  PoolSet pools(20);
  std::vector<int64_t> ids = shuffled_ids(pools.pages, 29, 21);
  DeviceBuffer<int64_t> device_ids(ids.size());
  device_ids.upload(ids.data(), ids.size());
  const size_t staged = ids.size() * staged_page_bytes(pools.groups(false));
  std::vector<std::byte> staging_host = random_bytes(staged, 22);
  DeviceBuffer<std::byte> staging(staged);
  staging.upload(staging_host.data(), staged);
  copy_pages_reference(TransferDirection::kScatter, pools.groups(false), ids, staging_host.data());
  copy_pages(TransferDirection::kScatter, pools.groups(true), device_ids.data(), ids.size(), staging.data(),
             nullptr);
  for (size_t g = 0; g < pools.host.size(); ++g) {
    std::vector<std::byte> got(pools.host[g].size());
    pools.device[g].download(got.data(), got.size());
    ASSERT_EQ(got, pools.host[g]) << "group " << g;
  }
}

TEST_F(GpuKernels, WordAlignedGroupsTakeTheFastPathAndMatchReference) {
  // A bf16 group beside a packed-uint8 group (8 x 136 B slots) and an empty group, all 16-byte multiples.
  PoolSet pools(60, {12288, 1088, 0, 4096}, {12288 + 512, 1088, 16, 4096});
  std::vector<int64_t> ids = shuffled_ids(pools.pages, 41, 61);
  DeviceBuffer<int64_t> device_ids(ids.size());
  device_ids.upload(ids.data(), ids.size());
  const size_t staged = ids.size() * staged_page_bytes(pools.groups(false));
  std::vector<std::byte> expected(staged);
  copy_pages_reference(TransferDirection::kGather, pools.groups(false), ids, expected.data());
  DeviceBuffer<std::byte> staging(staged);
  copy_pages(TransferDirection::kGather, pools.groups(true), device_ids.data(), ids.size(), staging.data(),
             nullptr);
  std::vector<std::byte> got(staged);
  staging.download(got.data(), staged);
  ASSERT_EQ(got, expected);

  std::vector<std::byte> incoming = random_bytes(staged, 62);
  staging.upload(incoming.data(), staged);
  copy_pages_reference(TransferDirection::kScatter, pools.groups(false), ids, incoming.data());
  copy_pages(TransferDirection::kScatter, pools.groups(true), device_ids.data(), ids.size(), staging.data(),
             nullptr);
  for (size_t g = 0; g < pools.host.size(); ++g) {
    std::vector<std::byte> pool(pools.host[g].size());
    pools.device[g].download(pool.data(), pool.size());
    ASSERT_EQ(pool, pools.host[g]) << "group " << g;
  }
}

TEST_F(GpuKernels, GatherCoversMorePagesThanOneGridDimension) {
  const int64_t pages = 70000, bytes = 16;
  std::vector<std::byte> pool = random_bytes(pages * bytes, 30);
  DeviceBuffer<std::byte> device_pool(pool.size());
  device_pool.upload(pool.data(), pool.size());
  std::vector<int64_t> ids = shuffled_ids(pages, pages, 31);
  DeviceBuffer<int64_t> device_ids(ids.size());
  device_ids.upload(ids.data(), ids.size());
  std::vector<PageGroup> host_group = {{pool.data(), pages, bytes, bytes}};
  std::vector<PageGroup> device_group = {{device_pool.data(), pages, bytes, bytes}};
  std::vector<std::byte> expected(pool.size());
  copy_pages_reference(TransferDirection::kGather, host_group, ids, expected.data());
  DeviceBuffer<std::byte> staging(pool.size());
  copy_pages(TransferDirection::kGather, device_group, device_ids.data(), pages, staging.data(), nullptr);
  std::vector<std::byte> got(pool.size());
  staging.download(got.data(), got.size());
  ASSERT_EQ(got, expected);
}

// Keys with a few large outlier channels (as real keys have), values Gaussian, some all-zero vectors.
std::vector<uint16_t> synthetic_bf16(size_t vectors, int d, uint32_t seed, bool outliers) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<uint16_t> out(vectors * d);
  for (size_t n = 0; n < vectors; ++n) {
    for (int i = 0; i < d; ++i) {
      float x = n % 97 == 5 ? 0.0f : normal(rng);
      if (outliers && i % 37 == 3) x = 20.0f * x + 8.0f;
      out[n * d + i] = float_to_bf16(x);
    }
  }
  return out;
}

// bf16 vectors across the encodings' edge cases, one regime per vector: magnitudes whose fp16 scale or
// norm is subnormal (1e-6) or saturates (1e5), squares that overflow to an infinite norm (1e20), a
// constant, zeros of both signs, raw bit patterns (NaN, infinities, bf16 subnormals), and all infinite.
std::vector<uint16_t> edge_case_bf16(size_t vectors, int d, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  const float magnitudes[] = {1e-6f, 1.0f, 3e4f, 1e5f, 1e20f};
  std::vector<uint16_t> out(vectors * d);
  for (size_t n = 0; n < vectors; ++n) {
    const size_t regime = n % 9;
    const uint16_t constant = float_to_bf16(normal(rng)), infinite = rng() % 2 != 0 ? 0x7f80 : 0xff80;
    for (int i = 0; i < d; ++i) {
      uint16_t& x = out[n * d + i];
      if (regime < 5) x = float_to_bf16(normal(rng) * magnitudes[regime]);
      if (regime == 5) x = constant;
      if (regime == 6) x = rng() % 2 != 0 ? 0x8000 : 0x0000;
      if (regime == 7) x = static_cast<uint16_t>(rng());
      if (regime == 8) x = infinite;
    }
  }
  return out;
}

template <typename T>
std::vector<T> to_host(const DeviceBuffer<T>& buffer, size_t n) {
  std::vector<T> out(n);
  buffer.download(out.data(), n);
  return out;
}

// Expects equal buffers of records `stride` elements long; a failure names the first differing record,
// its offset and both values, and how many elements differ.
template <typename T>
void expect_same(const std::vector<T>& got, const std::vector<T>& expected, size_t stride,
                 const std::string& what) {
  ASSERT_EQ(got.size(), expected.size()) << what;
  size_t first = got.size(), differing = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] == expected[i]) continue;
    if (differing++ == 0) first = i;
  }
  EXPECT_EQ(differing, 0u) << what << ": first at record " << first / stride << ", offset " << first % stride
                           << ": got 0x" << std::hex << +got[first] << ", expected 0x" << +expected[first];
}

// Quantizes k and v on the GPU and by the reference and checks the slots agree; returns them.
std::vector<uint8_t> check_turboquant_quantize(const TurboQuantParams& params, const std::vector<uint16_t>& k,
                                               const std::vector<uint16_t>& v) {
  const size_t vectors = k.size() / params.head_dim;
  std::vector<uint8_t> expected(vectors * params.slot_bytes);
  turboquant_quantize_reference(params, k, v, expected);
  DeviceBuffer<uint16_t> dk(k.size()), dv(v.size());
  DeviceBuffer<uint8_t> slots(expected.size());
  dk.upload(k.data(), k.size());
  dv.upload(v.data(), v.size());
  turboquant_quantize(params, dk.data(), dv.data(), slots.data(), static_cast<int64_t>(vectors), nullptr);
  expect_same(to_host(slots, expected.size()), expected, params.slot_bytes,
              "quantize, head_dim " + std::to_string(params.head_dim));
  return expected;
}

void check_turboquant_dequantize(const TurboQuantParams& params, const std::vector<uint8_t>& slots) {
  const size_t vectors = slots.size() / params.slot_bytes, n = vectors * params.head_dim;
  std::vector<uint16_t> k_ref(n), v_ref(n);
  turboquant_dequantize_reference(params, slots, k_ref, v_ref);
  DeviceBuffer<uint8_t> device_slots(slots.size());
  device_slots.upload(slots.data(), slots.size());
  DeviceBuffer<uint16_t> dk(n), dv(n);
  turboquant_dequantize(params, device_slots.data(), dk.data(), dv.data(), static_cast<int64_t>(vectors),
                        nullptr);
  const std::string shape = ", head_dim " + std::to_string(params.head_dim);
  expect_same(to_host(dk, n), k_ref, params.head_dim, "dequantize K" + shape);
  expect_same(to_host(dv, n), v_ref, params.head_dim, "dequantize V" + shape);
}

TEST_F(GpuKernels, TurboQuantMatchesReferenceBitForBit) {
  for (int d : {32, 64, 128, 256, 512}) {
    const size_t vectors = 1001;
    TurboQuantParams params = turboquant_params(d);
    std::vector<uint8_t> slots = check_turboquant_quantize(params, synthetic_bf16(vectors, d, 40 + d, true),
                                                           synthetic_bf16(vectors, d, 41, false));
    check_turboquant_dequantize(params, slots);
  }
  // Slots aligned to 2 bytes only (slot_align 2): the kernels' byte-wise path.
  for (int d : {64, 512}) {
    TurboQuantParams packed = turboquant_params(d, 2);
    check_turboquant_dequantize(packed, check_turboquant_quantize(packed, synthetic_bf16(333, d, 42, true),
                                                                  synthetic_bf16(333, d, 43, false)));
  }
}

TEST_F(GpuKernels, TurboQuantMatchesReferenceOnEdgeCases) {
  for (int d : {32, 64, 128, 256, 512}) {
    const size_t vectors = 999;
    TurboQuantParams params = turboquant_params(d);
    check_turboquant_quantize(params, edge_case_bf16(vectors, d, 60 + d), edge_case_bf16(vectors, d, 61 + d));
    // Arbitrary slots: NaN and infinite norms, scales and zeros, every nibble.
    std::vector<std::byte> bytes = random_bytes(vectors * params.slot_bytes, 62 + d);
    std::vector<uint8_t> slots(bytes.size());
    std::memcpy(slots.data(), bytes.data(), bytes.size());
    check_turboquant_dequantize(params, slots);
  }
}

TEST_F(GpuKernels, TurboQuantWithCloseBoundariesTakesTheSearchAndMatchesReference) {
  TurboQuantParams params = turboquant_params(128);
  // Boundaries 8 and 9 (about 0.258) in one bucket of the cell table: the table would put every z from
  // there to the bucket's end (0.3125) one cell too low.
  params.codebook.boundaries[9] = std::nextafter(params.codebook.boundaries[8], 1.0f);
  const size_t vectors = 515;
  check_turboquant_quantize(params, synthetic_bf16(vectors, 128, 80, true),
                            synthetic_bf16(vectors, 128, 81, false));
}

TEST_F(GpuKernels, TurboQuantWithANegativeZeroBoundaryMatchesReference) {
  // The table kernel with a boundary of -0, end to end: vectors of zeros of both signs give z = +-0 on the
  // GPU's arithmetic. The subnormals just above +0, where a table keeping -0 would be wrong, no input here
  // reaches; cell_table_test checks those on the host.
  TurboQuantParams params = turboquant_params(128);
  params.codebook.boundaries[7] = -0.0f;
  const size_t vectors = 999;
  check_turboquant_quantize(params, edge_case_bf16(vectors, 128, 90), edge_case_bf16(vectors, 128, 91));
}

Int4GroupParams int4_params(int d, int g) {
  Encoding encoding;
  encoding.kind = EncodingKind::kInt4Group;
  encoding.group_size = g;
  return int4_group_params(d, encoding);
}

std::string int4_shape(const Int4GroupParams& params) {
  return ", d " + std::to_string(params.row_elements) + ", group " + std::to_string(params.group_size);
}

std::vector<uint8_t> check_int4_quantize(const Int4GroupParams& params, const std::vector<uint16_t>& x) {
  const size_t rows = x.size() / params.row_elements;
  std::vector<uint8_t> expected(rows * params.record_bytes());
  int4_group_quantize_reference(params, x, expected);
  DeviceBuffer<uint16_t> dx(x.size());
  DeviceBuffer<uint8_t> records(expected.size());
  dx.upload(x.data(), x.size());
  int4_group_quantize(params, dx.data(), records.data(), static_cast<int64_t>(rows), nullptr);
  expect_same(to_host(records, expected.size()), expected, params.record_bytes(),
              "quantize" + int4_shape(params));
  return expected;
}

void check_int4_dequantize(const Int4GroupParams& params, const std::vector<uint8_t>& records) {
  const size_t rows = records.size() / params.record_bytes(), n = rows * params.row_elements;
  std::vector<uint16_t> expected(n);
  int4_group_dequantize_reference(params, records, expected);
  DeviceBuffer<uint8_t> device_records(records.size());
  device_records.upload(records.data(), records.size());
  DeviceBuffer<uint16_t> dx(n);
  int4_group_dequantize(params, device_records.data(), dx.data(), static_cast<int64_t>(rows), nullptr);
  expect_same(to_host(dx, n), expected, params.row_elements, "dequantize" + int4_shape(params));
}

TEST_F(GpuKernels, Int4GroupMatchesReferenceBitForBit) {
  // d = 96: 12 chunks of 8 per row, the dequantize kernel's division path; 100,003 rows: more lanes'
  // worth of chunks than one wave holds, so the grid-stride rounds and their tails run.
  struct Case {
    int d, g;
    size_t rows;
  };
  for (const Case& c : {Case{128, 8, 777}, Case{128, 32, 777}, Case{128, 128, 777}, Case{96, 32, 777},
                        Case{128, 32, 100003}}) {
    const Int4GroupParams params = int4_params(c.d, c.g);
    check_int4_dequantize(params, check_int4_quantize(params, synthetic_bf16(c.rows, c.d, 50 + c.g, true)));
  }
}

TEST_F(GpuKernels, Int4GroupMatchesReferenceOnEdgeCases) {
  for (int g : {8, 32, 128}) {
    const Int4GroupParams params = int4_params(128, g);
    const size_t rows = 999;
    check_int4_quantize(params, edge_case_bf16(rows, 128, 70 + g));
    std::vector<std::byte> bytes = random_bytes(rows * params.record_bytes(), 71 + g);
    std::vector<uint8_t> records(bytes.size());
    std::memcpy(records.data(), bytes.data(), bytes.size());
    check_int4_dequantize(params, records);
  }
}

TEST_F(GpuKernels, LaunchersRejectMisalignedBuffers) {
  TurboQuantParams params = turboquant_params(128);
  DeviceBuffer<uint16_t> k(256), v(256);
  DeviceBuffer<uint8_t> slots(params.slot_bytes * 2);
  EXPECT_THROW(turboquant_quantize(params, k.data() + 1, v.data(), slots.data(), 1, nullptr),
               std::invalid_argument);
  KVTIER_GPU_CHECK(gpuDeviceSynchronize());
}

}  // namespace
}  // namespace kvtier::hw
