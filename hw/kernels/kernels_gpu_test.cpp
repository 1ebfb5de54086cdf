// The GPU kernels against their CPU references, byte for byte. Skips where no GPU is visible.
#include "kernels_gpu.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "gpu/check.h"
#include "gpu/device_buffer.h"
#include "kv_layout.h"
#include "quant_math.h"

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

TEST_F(GpuKernels, TurboQuantMatchesReferenceBitForBit) {
  for (int d : {32, 64, 128, 256, 512}) {
    const size_t vectors = 1001;
    TurboQuantParams params = turboquant_params(d);
    std::vector<uint16_t> k = synthetic_bf16(vectors, d, 40 + d, true),
                          v = synthetic_bf16(vectors, d, 41, false);
    std::vector<uint8_t> expected(vectors * params.slot_bytes);
    turboquant_quantize_reference(params, k, v, expected);
    DeviceBuffer<uint16_t> dk(k.size()), dv(v.size());
    DeviceBuffer<uint8_t> slots(expected.size());
    dk.upload(k.data(), k.size());
    dv.upload(v.data(), v.size());
    turboquant_quantize(params, dk.data(), dv.data(), slots.data(), vectors, nullptr);
    std::vector<uint8_t> got(expected.size());
    slots.download(got.data(), got.size());
    ASSERT_EQ(got, expected) << "quantize, head_dim " << d;

    std::vector<uint16_t> k_ref(k.size()), v_ref(v.size()), k_got(k.size()), v_got(v.size());
    turboquant_dequantize_reference(params, expected, k_ref, v_ref);
    turboquant_dequantize(params, slots.data(), dk.data(), dv.data(), vectors, nullptr);
    dk.download(k_got.data(), k_got.size());
    dv.download(v_got.data(), v_got.size());
    ASSERT_EQ(k_got, k_ref) << "dequantize K, head_dim " << d;
    ASSERT_EQ(v_got, v_ref) << "dequantize V, head_dim " << d;
  }
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
    const int g = c.g;
    const size_t rows = c.rows;
    Encoding encoding;
    encoding.kind = EncodingKind::kInt4Group;
    encoding.group_size = g;
    Int4GroupParams params = int4_group_params(c.d, encoding);
    std::vector<uint16_t> x = synthetic_bf16(rows, c.d, 50 + g, true);
    std::vector<uint8_t> expected(rows * params.record_bytes());
    int4_group_quantize_reference(params, x, expected);
    DeviceBuffer<uint16_t> dx(x.size());
    DeviceBuffer<uint8_t> records(expected.size());
    dx.upload(x.data(), x.size());
    int4_group_quantize(params, dx.data(), records.data(), rows, nullptr);
    std::vector<uint8_t> got(expected.size());
    records.download(got.data(), got.size());
    ASSERT_EQ(got, expected) << "quantize, d " << c.d << ", group " << g << ", rows " << rows;

    std::vector<uint16_t> x_ref(x.size()), x_got(x.size());
    int4_group_dequantize_reference(params, expected, x_ref);
    int4_group_dequantize(params, records.data(), dx.data(), rows, nullptr);
    dx.download(x_got.data(), x_got.size());
    ASSERT_EQ(x_got, x_ref) << "dequantize, d " << c.d << ", group " << g << ", rows " << rows;
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
