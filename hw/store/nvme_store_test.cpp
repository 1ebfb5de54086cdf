#include "hw/store/nvme_store.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <random>

#include "hw/store/fault_injecting_file.h"
#include "hw/store/memory_region.h"
#include "hw/store/store_error.h"

namespace kvtier::hw {
namespace {

namespace fs = std::filesystem;

// A fresh directory per test under the system temp directory (a disk-backed file system here).
class NvmeStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("kvtier-nvme-" + std::to_string(::getpid()) + "-" + info->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string file(const char* name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

std::unique_ptr<NvmeStore> logged_store(const std::string& path, const NvmeStoreOptions& options,
                                        std::shared_ptr<IoLog> log) {
  auto file = std::make_unique<DirectFile>(path, NvmeStore::file_bytes(options), IoMode::kDirect);
  return std::make_unique<NvmeStore>(std::make_unique<FaultInjectingFile>(std::move(file), std::move(log)),
                                     options);
}

void fill_random(std::span<std::byte> bytes, std::mt19937_64& rng) {
  for (std::byte& b : bytes) b = static_cast<std::byte>(rng());
}

std::vector<std::byte> read_back(NvmeStore& store, BlockKey key) {
  MemoryRegion buffer = allocate_host_region(store.slot_bytes());
  std::memset(buffer.data(), 0xA5, buffer.bytes());  // poison: unread bytes would show
  const BlockRead read{key, {buffer.data(), buffer.bytes()}};
  store.get({&read, 1});
  return {buffer.data(), buffer.data() + store.stored_bytes(key)};
}

TEST_F(NvmeStoreTest, RoundTripsRaggedRandomBlocksByteForByte) {
  const NvmeStoreOptions options{.block_bytes = 64 * 1024 + 100, .capacity_blocks = 64, .queue_depth = 4};
  auto store = NvmeStore::create(file("store"), options);
  std::mt19937_64 rng(42);
  const int blocks = 40;
  MemoryRegion source = allocate_host_region(blocks * store->slot_bytes());
  fill_random({source.data(), source.bytes()}, rng);
  std::vector<BlockWrite> writes;
  for (int i = 0; i < blocks; ++i) {
    const uint64_t size = 1 + rng() % options.block_bytes;
    writes.push_back({static_cast<BlockKey>(1000 + i), {source.data() + i * store->slot_bytes(), size}});
  }
  store->put(writes);
  for (const BlockWrite& write : writes) {
    const std::vector<std::byte> back = read_back(*store, write.key);
    ASSERT_EQ(back.size(), write.bytes.size());
    EXPECT_EQ(std::memcmp(back.data(), write.bytes.data(), back.size()), 0) << "key " << write.key;
  }
}

TEST_F(NvmeStoreTest, MergesAdjacentFullBlocksIntoFewLargeIos) {
  const NvmeStoreOptions options{
      .block_bytes = 16384, .capacity_blocks = 32, .queue_depth = 2, .max_io_bytes = 4 * 16384};
  auto log = std::make_shared<IoLog>();
  auto store = logged_store(file("store"), options, log);
  const int header_writes = log->writes, header_reads = log->reads;  // the file's header, at creation
  MemoryRegion pages = allocate_host_region(16 * 16384);
  std::mt19937_64 rng(7);
  fill_random({pages.data(), pages.bytes()}, rng);
  std::vector<BlockWrite> writes;
  for (int i = 0; i < 16; ++i)
    writes.push_back({static_cast<BlockKey>(i), {pages.data() + i * 16384, 16384}});
  store->put(writes);
  EXPECT_EQ(log->writes - header_writes, 4);  // 16 adjacent slots, at most 4 per I/O

  MemoryRegion back = allocate_host_region(16 * 16384);
  std::vector<BlockRead> reads;
  for (int i = 0; i < 16; ++i) reads.push_back({static_cast<BlockKey>(i), {back.data() + i * 16384, 16384}});
  store->get(reads);
  EXPECT_EQ(log->reads - header_reads, 4);
  EXPECT_EQ(std::memcmp(back.data(), pages.data(), pages.bytes()), 0);
}

TEST_F(NvmeStoreTest, AFailedWriteLeavesEveryStoredKeyAsItWas) {
  const NvmeStoreOptions options{.block_bytes = 8192, .capacity_blocks = 8, .queue_depth = 1};
  auto log = std::make_shared<IoLog>();
  auto store = logged_store(file("store"), options, log);
  MemoryRegion old_value = allocate_host_region(8192);
  MemoryRegion new_values = allocate_host_region(3 * 8192);
  std::memset(old_value.data(), 0x11, 8192);
  std::memset(new_values.data(), 0x22, 3 * 8192);
  const BlockWrite first{7, {old_value.data(), 8192}};
  store->put({&first, 1});

  log->writes_allowed = log->writes;  // the disk is full from here on
  // Keys 7 (overwrite), 8, 9 in non-adjacent memory: three separate writes, all refused.
  const std::vector<BlockWrite> batch = {{7, {new_values.data(), 4096}},
                                         {8, {new_values.data() + 8192, 4096}},
                                         {9, {new_values.data() + 16384, 4096}}};
  try {
    store->put(batch);
    FAIL() << "the write should have failed";
  } catch (const StoreError& error) {
    EXPECT_EQ(error.code(), StoreErrc::kIo);
    EXPECT_NE(std::string(error.what()).find("No space left on device"), std::string::npos) << error.what();
  }
  EXPECT_FALSE(store->contains(8));
  EXPECT_FALSE(store->contains(9));
  EXPECT_EQ(store->free_blocks(), 7u);
  const std::vector<std::byte> back = read_back(*store, 7);
  ASSERT_EQ(back.size(), 8192u);
  EXPECT_EQ(back[0], std::byte{0x11});
  EXPECT_EQ(back[8191], std::byte{0x11});
}

TEST_F(NvmeStoreTest, AFullStoreRefusesTheWholeBatchBeforeAnyIo) {
  const NvmeStoreOptions options{.block_bytes = 4096, .capacity_blocks = 4, .queue_depth = 1};
  auto log = std::make_shared<IoLog>();
  auto store = logged_store(file("store"), options, log);
  MemoryRegion pages = allocate_host_region(5 * 4096);
  std::memset(pages.data(), 0x3C, pages.bytes());
  std::vector<BlockWrite> writes;
  for (int i = 0; i < 5; ++i) writes.push_back({static_cast<BlockKey>(i), {pages.data() + i * 4096, 4096}});
  store->put(std::span(writes).first(3));
  const int writes_before = log->writes;
  try {
    store->put(std::span(writes).subspan(3, 2));
    FAIL() << "the store should be full";
  } catch (const StoreError& error) {
    EXPECT_EQ(error.code(), StoreErrc::kFull);
  }
  EXPECT_EQ(log->writes, writes_before);
  EXPECT_EQ(store->stored_blocks(), 3u);
  EXPECT_EQ(read_back(*store, 2)[100], std::byte{0x3C});
}

TEST_F(NvmeStoreTest, ABlockCorruptedOnDiskIsReportedAndDroppedNotReturned) {
  const NvmeStoreOptions options{.block_bytes = 4096, .capacity_blocks = 2, .queue_depth = 1};
  auto store = NvmeStore::create(file("store"), options);
  MemoryRegion page = allocate_host_region(4096);
  std::memset(page.data(), 0x5A, 4096);
  const BlockWrite write{99, {page.data(), 4096}};
  store->put({&write, 1});

  // Flip one byte of slot 0 (after the file's 4 KiB header) behind the store's back, as a torn write or
  // a bad sector would.
  const int fd = ::open(file("store").c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  const char flipped = 0x5B;
  ASSERT_EQ(::pwrite(fd, &flipped, 1, 4096 + 2000), 1);
  ::fsync(fd);
  ::close(fd);

  try {
    read_back(*store, 99);
    FAIL() << "corruption went unnoticed";
  } catch (const StoreError& error) {
    EXPECT_EQ(error.code(), StoreErrc::kCorrupt);
    EXPECT_NE(std::string(error.what()).find("99"), std::string::npos) << error.what();
  }
  EXPECT_FALSE(store->contains(99));
}

TEST_F(NvmeStoreTest, ADiskTooSmallFailsAtCreateNamingTheFileAndLeavesNothingBehind) {
  // RLIMIT_FSIZE makes the file system refuse to grow the file past 1 MiB, as a full disk would.
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  const auto previous_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit small = saved;
  small.rlim_cur = 1 << 20;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  const NvmeStoreOptions options{.block_bytes = 1 << 20, .capacity_blocks = 4};
  std::string message;
  try {
    NvmeStore::create(file("store"), options);
  } catch (const StoreError& error) {
    message = error.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, previous_handler);
  EXPECT_NE(message.find(file("store")), std::string::npos) << message;
  EXPECT_NE(message.find("4198400 bytes"), std::string::npos) << message;  // 4 x 1 MiB slots + 4 KiB header
  EXPECT_FALSE(fs::exists(file("store")));
}

TEST_F(NvmeStoreTest, OverwritingAKeyFreesItsOldSlot) {
  const NvmeStoreOptions options{.block_bytes = 4096, .capacity_blocks = 2, .queue_depth = 1};
  auto store = NvmeStore::create(file("store"), options);
  MemoryRegion page = allocate_host_region(4096);
  for (int value = 0; value < 5; ++value) {
    std::memset(page.data(), value, 4096);
    const BlockWrite write{1, {page.data(), 4096}};
    store->put({&write, 1});
  }
  EXPECT_EQ(store->free_blocks(), 1u);
  EXPECT_EQ(read_back(*store, 1)[4095], std::byte{4});
}

TEST_F(NvmeStoreTest, RejectsUnalignedBuffersOversizedBlocksAndRepeatedKeys) {
  const NvmeStoreOptions options{.block_bytes = 4096, .capacity_blocks = 4, .queue_depth = 1};
  auto store = NvmeStore::create(file("store"), options);
  MemoryRegion page = allocate_host_region(3 * 4096);
  const BlockWrite unaligned{1, {page.data() + 8, 100}};
  const BlockWrite oversized{2, {page.data(), 4097}};
  const std::vector<BlockWrite> repeated = {{3, {page.data(), 10}}, {3, {page.data() + 4096, 10}}};
  for (auto batch : {std::span(&unaligned, 1), std::span(&oversized, 1), std::span(repeated)}) {
    try {
      store->put(batch);
      FAIL() << "accepted a bad request";
    } catch (const StoreError& error) {
      EXPECT_EQ(error.code(), StoreErrc::kBadRequest);
    }
  }
  EXPECT_EQ(store->free_blocks(), 4u);
}

}  // namespace
}  // namespace kvtier::hw
